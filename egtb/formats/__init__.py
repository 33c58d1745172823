"""Table files and their codes: values, the master HDF5 files, scratch files, caches, compact files."""
