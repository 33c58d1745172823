"""Positions of a material: the slices (material, counts) and the bijective index (rank/unrank)."""
