"""Say what a run found: a verdict table while it runs, and JSON / JUnit files for tools."""
