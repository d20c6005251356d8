"""What one layer is: shape, parameter and FLOP inference (shapes, shapes_tokens,
shape_base) and the spatial geometry of a split layer (geometry: halos)."""
