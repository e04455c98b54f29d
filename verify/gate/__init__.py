"""The annotation gate: prove `targeted_ops` annotations skip- and copy-sound, pass by pass."""
