"""The one Dask home, shared by the builder and the tournament: the cluster connection, the worker plugin and DaskPool (the executor interface of :mod:`egtb.executor` on a cluster)."""
