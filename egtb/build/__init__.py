"""The table builder: plan, solvers (unit kernels), rule layers, budget, driver, executors, verify, stats."""
