"""kstore's benchmarks: ``python -m benchmarks [NAME ...] [--quick]`` (``make bench``)."""
