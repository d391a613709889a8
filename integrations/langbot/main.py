from __future__ import annotations

from langbot_plugin.api.definition.plugin import BasePlugin


class MemorySearchPlugin(BasePlugin):
    """Holds no state: each knowledge base lives in its own tables in the configured PostgreSQL."""
