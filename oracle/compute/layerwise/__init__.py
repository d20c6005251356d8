"""Layer-wise parallelization and the search of ``oracle search``: per-layer costs of
every distribution (layerwise*, issue 18), the graph search over them (graphsearch,
graphplan, dominance) and the search over uniform and layer-wise configurations."""
