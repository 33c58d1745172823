"""The Dask cluster connection and worker plugin, shared by the builder and the tournament."""
