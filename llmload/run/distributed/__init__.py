"""A master and its workers: the worker book (workers.py, applied.py), a worker's side of it
(worker_side.py), the handshake (handshake.py), what a worker is given (exposure.py) and the drain at the end
(drain.py). Imports of run/: the state and below (run/__init__.py)."""
