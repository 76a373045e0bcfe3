"""PyTorch's thread count, applied to the BLAS it calls as well.

Debian's PyTorch 1.13 calls the system BLAS (libblas.so.3, which is
OpenBLAS's pthread build on these machines) for Linear and MatMul, and
OpenBLAS keeps a thread pool of its own that torch.set_num_threads does not
reach: a "one thread" PyTorch ran its products on every core. A peer timed
at a thread setting must use that many threads, so the benches set both.
"""
import ctypes


def set_torch_threads(threads):
    """torch.set_num_threads(threads), and OpenBLAS's pool to the same
    count where the BLAS torch loaded is OpenBLAS. Returns the BLAS's count
    afterwards (None when the BLAS has no such call)."""
    import torch
    torch.set_num_threads(threads)
    try:
        # The library torch already loaded: dlopen returns the same handle.
        blas = ctypes.CDLL("libblas.so.3")
    except OSError:
        return None
    if not hasattr(blas, "openblas_set_num_threads"):
        return None
    blas.openblas_set_num_threads(int(threads))
    return blas.openblas_get_num_threads()
