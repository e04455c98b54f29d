"""What `verify bench` found, and how it is shown: its results as typed values and their JSON
(results.py: pairs, spreads, ratios, identity), the terminal table (table.py) and the per-pass
picture (plot.py). Here, not in verify/bench, because every report is written from the report
package; verify/bench (the campaign: its models, workers and interleaved pairs) fills them in."""
