"""Search indexes over chunks (BM25, dense) and the fusion of their rankings."""
