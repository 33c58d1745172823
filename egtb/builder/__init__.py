"""The table builder: plan, pipeline (one pair), solvers (unit kernels), rule layers, budget, driver, split, verify, stats."""
