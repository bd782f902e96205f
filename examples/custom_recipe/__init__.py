"""A chunker of one's own for a recipe."""

from examples.custom_recipe.chunker import ParagraphChunker

__all__ = ["ParagraphChunker"]
