"""What a case result keeps of each retrieved item (`heta_eval.run.cases`)."""

from __future__ import annotations

from heta_eval.records import QueryResponse, QueryResult, SourceRef
from heta_eval.run.cases import retrieved_items


def test_retrieved_items_keep_only_the_keys_the_layout_does_not_give() -> None:
    def hit(document: str, key: str) -> QueryResult:
        source = SourceRef(source_key=key, document_id=document)
        return QueryResult(id=f"{document}#0", text="t", score=1.0, source=source)

    response = QueryResponse(
        query="q", mode="bm25", results=(hit("a", "raw/p/a/a.txt"), hit("b", "raw/p/b/scan.pdf"))
    )
    items = retrieved_items(response, ("raw/p/", ".txt"))
    assert [i["source_key"] for i in items] == [None, "raw/p/b/scan.pdf"]
    # Without a layout (documents named every which way), every item keeps its key.
    assert [i["source_key"] for i in retrieved_items(response)] == [
        "raw/p/a/a.txt",
        "raw/p/b/scan.pdf",
    ]
