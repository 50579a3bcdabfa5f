"""The attribute annotator against a real local HTTP server speaking the OpenAI chat-completions API."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from uniroute import store
from uniroute.embed.annotator import AnnotatorConfig, AnnotatorError, annotate, parse_answer
from uniroute.embed.attributes import ATTRIBUTES


class _ChatServer(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: labels a prompt by a rule (long prompts are complex, '?' is specific)."""

    requests: list[dict] = []
    mode = "ok"

    def do_POST(self) -> None:  # noqa: N802 (the http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if type(self).mode == "unauthorised":
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b'{"error": "bad key"}')
            return
        text = body["messages"][-1]["content"]
        labels = {name: 0 for name in ATTRIBUTES}
        labels["complexity"] = int(len(text) > 20)
        labels["specificity"] = int("?" in text)
        content = "Sure! " + json.dumps(labels) if type(self).mode == "ok" else "I cannot say."
        payload = {"choices": [{"message": {"role": "assistant", "content": content}}]}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    _ChatServer.requests, _ChatServer.mode = [], "ok"
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ChatServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


TEXTS = ["What is 2 + 2?", "Write a long story about a lighthouse keeper", "What is 2 + 2?", "Hi"]


def test_annotations_come_from_the_endpoint_once_then_from_the_store(server, db_path) -> None:
    config = AnnotatorConfig(server, "local-model", api_key="secret")
    with store.session(db_path, "annotate", atomic=False) as s:
        labels = annotate(s.con, TEXTS, config, progress=False)
    assert labels["specificity"].tolist() == [1, 0, 1, 0]
    assert labels["complexity"].tolist() == [0, 1, 0, 0]
    assert list(labels.columns) == list(ATTRIBUTES)
    assert len(_ChatServer.requests) == 3  # the repeated text is asked about once
    first = _ChatServer.requests[0]
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer secret"
    assert first["body"]["model"] == "local-model" and first["body"]["messages"][0]["role"] == "system"
    with store.session(db_path, "annotate", atomic=False) as s:
        again = annotate(s.con, TEXTS, config, progress=False)
    assert again.equals(labels) and len(_ChatServer.requests) == 3  # cached in the store
    with store.opened(db_path, read_only=True) as con:
        assert con.execute("select count(*) from prompt_attributes").fetchone()[0] == 3


def test_an_unusable_answer_or_a_refusal_is_one_clear_line_and_keeps_earlier_answers(server, db_path) -> None:
    config = AnnotatorConfig(server, "local-model")
    with store.session(db_path, "annotate", atomic=False) as s:
        annotate(s.con, TEXTS[:1], config, progress=False)
    for mode, message in (("gibberish", r"/v1/chat/completions: unusable answer about prompt [0-9a-f]{12} "
                                         r"\(no JSON object in the answer\): 'I cannot say\.'"),
                          ("unauthorised", r"HTTP 401 Unauthorized: \{\"error\": \"bad key\"\}")):
        _ChatServer.mode = mode
        with pytest.raises(AnnotatorError, match=message), store.session(db_path, "annotate", atomic=False) as s:
            annotate(s.con, TEXTS, config, progress=False)
    with store.opened(db_path, read_only=True) as con:
        assert con.execute("select count(*) from prompt_attributes").fetchone()[0] == 1


def test_an_unreachable_endpoint_is_named() -> None:
    config = AnnotatorConfig("http://127.0.0.1:9/v1", "m", timeout_seconds=5)
    from uniroute.embed.annotator import ask

    with pytest.raises(AnnotatorError, match=r"^http://127\.0\.0\.1:9/v1/chat/completions: cannot reach"):
        ask(config, "hello")


def test_parse_answer_needs_every_attribute_as_zero_or_one() -> None:
    assert parse_answer('x {"a": 1, "b": false} y', ["a", "b"]) == {"a": 1, "b": 0}
    with pytest.raises(ValueError, match=r'b is "maybe", not 0 or 1'):
        parse_answer('{"a": 1, "b": "maybe"}', ["a", "b"])
    with pytest.raises(ValueError, match="b is null"):
        parse_answer('{"a": 1}', ["a", "b"])


def test_cli_annotate_writes_a_labels_file(server, home, tmp_path, monkeypatch) -> None:
    import pandas as pd
    from typer.testing import CliRunner

    from uniroute.cli import app

    log = tmp_path / "log.csv"
    pd.DataFrame({"prompt_id": ["p1", "p1", "p2"], "prompt": ["What?", "What?", "Tell me about the sea"],
                  "model": ["m1", "m2", "m1"], "score": [1, 0, 1], "cost": [1, 1, 1]}).to_csv(log, index=False)
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    out = tmp_path / "labels.csv"
    assert CliRunner().invoke(app, ["annotate", "--data", str(log), "--out", str(out)]).exit_code == 1  # no URL
    monkeypatch.setenv("UNIROUTE_ANNOTATOR_URL", server)
    monkeypatch.setenv("UNIROUTE_ANNOTATOR_MODEL", "local-model")
    result = CliRunner().invoke(app, ["annotate", "--data", str(log), "--out", str(out)])
    assert result.exit_code == 0, result.output
    labels = pd.read_csv(out)
    assert labels["prompt_id"].tolist() == ["p1", "p2"] and labels["specificity"].tolist() == [1, 0]
