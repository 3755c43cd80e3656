"""The size of a DynamoDB item the way DynamoDB counts it: one implementation, the layer's
(usage counting sizes stored messages with it), shared by the item-size tests and the bench."""

from __future__ import annotations

from agentworks.item_size import item_size, value_size

__all__ = ["item_size", "value_size"]
