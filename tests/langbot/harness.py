"""The LangBot plugin loaded the way LangBot's runtime loads it, with the host's side answered here:
files from a directory, embeddings from the local model standing in for a LangBot embedding model."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from langbot_plugin.api.entities.builtin.rag.context import RetrievalContext
from langbot_plugin.api.entities.builtin.rag.models import FileMetadata, FileObject, IngestionContext, ParseResult
from langbot_plugin.entities.io.actions.enums import PluginToRuntimeAction

PLUGIN_DIR = Path(__file__).resolve().parents[2] / "integrations" / "langbot"
MIME_TYPES = {".md": "text/markdown", ".txt": "text/plain", ".pdf": "application/pdf"}


def load_plugin_classes():
    """The plugin and engine classes, found through the manifests as the runtime finds them (from the plugin root)."""
    import os

    from langbot_plugin.utils.discover.engine import ComponentDiscoveryEngine

    discovery = ComponentDiscoveryEngine()
    previous = os.getcwd()
    os.chdir(PLUGIN_DIR)
    try:
        plugin = discovery.load_component_manifest("manifest.yaml", no_save=True)
        engine = discovery.load_component_manifest("components/knowledge_engine/memory_search_kb.yaml", no_save=True)
        return plugin.get_python_component_class(), engine.get_python_component_class()
    finally:
        os.chdir(previous)


class Host:
    """LangBot's end of the plugin connection: the actions a knowledge engine calls."""

    def __init__(self, storage: Path):
        self.storage = storage
        self.actions: list[str] = []
        self._model = None

    async def call_action(self, action, data, timeout=None, **_):
        self.actions.append(str(action.value))
        if action == PluginToRuntimeAction.GET_KNOWLEDEGE_FILE_STREAM:
            if not (self.storage / data["storage_path"]).is_file():
                raise RuntimeError(f"file {data['storage_path']} not found in storage")
            return {"file_key": data["storage_path"]}
        if action == PluginToRuntimeAction.INVOKE_EMBEDDING:
            return {"vectors": self.embed(data["texts"])}
        raise AssertionError(f"the engine called an action it should not need: {action}")

    async def read_local_file(self, file_key: str, **_) -> bytes:
        return (self.storage / file_key).read_bytes()

    async def delete_local_file(self, file_key: str, **_) -> None:
        return None

    def embed(self, texts: list[str]) -> list[list[float]]:
        """A LangBot embedding model: the local model, as a provider without query/passage roles."""
        from memory_search.embedding.local import LocalEmbedder

        self._model = self._model or LocalEmbedder()
        return self._model.embed_documents(texts)


class Bot:
    """Drives the engine through the SDK's entities, as LangBot's knowledge base manager does."""

    def __init__(self, storage: Path, config: dict | None = None):
        plugin_class, engine_class = load_plugin_classes()
        self.storage = storage
        self.host = Host(storage)
        self.plugin = plugin_class()
        self.plugin.plugin_runtime_handler = self.host
        self.plugin.config = config or {}
        self.engine = engine_class()
        self.engine.plugin = self.plugin
        self.created: list[str] = []

    def run(self, coroutine):
        return asyncio.run(coroutine)

    def create(self, **creation_settings) -> str:
        kb_id = str(uuid.uuid4())
        self.run(self.engine.on_knowledge_base_create(kb_id, creation_settings))
        self.created.append(kb_id)
        return kb_id

    def upload(self, name: str, content: str | bytes) -> str:
        """Put a file in the host's storage; returns its storage path."""
        path = self.storage / f"{uuid.uuid4().hex}-{name}"
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path.name

    def ingestion_context(self, kb_id: str, name: str, content: str | bytes | None = None,
                          document_id: str | None = None, parsed: str | None = None, settings: dict | None = None,
                          **extra) -> IngestionContext:
        """What LangBot sends for an uploaded file: its metadata, where the host stores it, the KB's settings."""
        storage_path = self.upload(name, content) if content is not None else f"missing-{name}"
        metadata = FileMetadata(filename=name, file_size=len(content or ""),
                                mime_type=MIME_TYPES.get(Path(name).suffix, "application/octet-stream"),
                                document_id=document_id or str(uuid.uuid4()), knowledge_base_id=kb_id, extra=extra)
        return IngestionContext(
            file_object=FileObject(metadata=metadata, storage_path=storage_path), knowledge_base_id=kb_id,
            collection_id=kb_id, creation_settings=settings or {},
            parsed_content=ParseResult(text=parsed) if parsed is not None else None)

    def retrieval_context(self, kb_id: str, query: str, filters: dict | None = None, creation: dict | None = None,
                          **retrieval_settings) -> RetrievalContext:
        retrieval_settings.setdefault("top_k", 5)  # the host injects it
        return RetrievalContext(query=query, knowledge_base_id=kb_id, collection_id=kb_id,
                                retrieval_settings=retrieval_settings, creation_settings=creation or {},
                                filters=filters or {})

    def ingest(self, kb_id: str, name: str, content: str | bytes | None = None, **options):
        return self.run(self.engine.ingest(self.ingestion_context(kb_id, name, content, **options)))

    def retrieve(self, kb_id: str, query: str, **options):
        return self.run(self.engine.retrieve(self.retrieval_context(kb_id, query, **options)))

    def delete_document(self, kb_id: str, document_id: str) -> bool:
        return self.run(self.engine.delete_document(kb_id, document_id))

    def drop(self, kb_id: str) -> None:
        self.run(self.engine.on_knowledge_base_delete(kb_id))


def documents(response) -> list[str]:
    return [entry.metadata["document_id"] for entry in response.results]


def texts(response) -> list[str]:
    return [entry.content[0].text for entry in response.results]
