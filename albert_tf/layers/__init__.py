"""Keras layers that make up ALBERT."""

from albert_tf.layers.attention import SelfAttentionBlock
from albert_tf.layers.embedding import AlbertEmbedding
from albert_tf.layers.encoder import AlbertEncoder
from albert_tf.layers.feedforward import FeedForwardBlock
from albert_tf.layers.mlm_head import MaskedLMHead
from albert_tf.layers.sop_head import SentenceOrderHead

__all__ = ["AlbertEmbedding", "AlbertEncoder", "FeedForwardBlock", "MaskedLMHead",
           "SelfAttentionBlock", "SentenceOrderHead"]
