"""The cost model over many configurations at once (issue 29): compute/vector/kinds.py
evaluates a strategy's configurations as numpy arrays (compute/vector/net.py: the
collectives, compute/vector/columns.py: memory and limits), compute/vector/run.py ranks
them and builds points only for what is output."""
