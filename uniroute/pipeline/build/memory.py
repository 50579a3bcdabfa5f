"""The driver's freed memory handed back to the system between a build's stages.

glibc keeps what numpy frees in its heap unless the block was mmap'd, and its mmap threshold rises to the size
of the largest freed block (up to 32 MB): after the first large arrays go, the next ones of that size land in the
heap and their pages stay resident after they are freed. `malloc_trim(0)` returns the free pages of every arena;
it changes no value, only the process's resident memory. A no-op where the C library has no malloc_trim (macOS,
musl)."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_LIBC = ctypes.CDLL(ctypes.util.find_library("c")) if sys.platform.startswith("linux") else None
_TRIM = getattr(_LIBC, "malloc_trim", None)


def release_freed() -> bool:
    """Hand the heap's free pages back to the system; True when some were (glibc's malloc_trim)."""
    return bool(_TRIM(0)) if _TRIM is not None else False
