"""The benchmark: stock vs fastpass, one fresh process per lowering, interleaved, same hash seed."""
