"""`monitor --prometheus` against a hostile server on loopback (a fake: a real Prometheus never does
these things, which is the point): a trickle of one byte every 2 s, redirects to another host and to
ftp://, ANSI escapes and newlines in labels, NaN/Inf, a 400-digit time, times -1e11 and -Inf, a
superscript GPU label, more series than the view takes, a 100 KB error text. Each ends in bounded
time with one short line or a clean view, never an internal error."""

from __future__ import annotations

import json
import time

import pytest
from hostile_http import Handler, servers

from aiworkbook.cli import main
from aiworkbook.httpget import FetchError, get
from aiworkbook.telemetry.prometheus import PrometheusError, PrometheusReader, format_fleet

pytestmark = pytest.mark.timeout(60)

NOW = 1_700_000_000.0


def _matrix(series: list[dict]) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}).encode()


class _Hostile(Handler):
    def do_GET(self):  # noqa: N802
        m = self.server.mode  # type: ignore[attr-defined]
        if m == "trickle":
            self.wfile.write(b"H")
            for _ in range(30):
                time.sleep(2)
                try:
                    self.wfile.write(b"T")
                    self.wfile.flush()
                except OSError:
                    return
            return
        if m in ("redirect-host", "redirect-ftp", "redirect-same"):
            if m == "redirect-same" and self.path.startswith("/moved"):
                return self._send(_matrix([]))
            where = {
                "redirect-host": self.server.other + self.path,  # type: ignore[attr-defined]
                "redirect-ftp": "ftp://127.0.0.1/x",
                "redirect-same": "/moved" + self.path,
            }[m]
            return self._send(b"", 302, {"Location": where})
        if m == "huge-error":
            body = json.dumps({"status": "error", "errorType": "bad_data", "error": "x" * 100_000}).encode()
            return self._send(body, 400)
        if m == "many":
            series = [
                {"metric": {"instance": f"n{i}", "gpu": "0"}, "values": [[NOW, "1"]]} for i in range(25_000)
            ]
            return self._send(_matrix(series))
        if m == "nasty":
            if "aiworkbook_telemetry_info" in self.path:
                return self._send(_matrix([]))
            series = [
                {
                    "metric": {"instance": "\x1b]0;pwned\x07\x1b[2Jnode\nforged row", "gpu": "²"},
                    "values": [
                        [NOW - 10, "NaN"],
                        [NOW - 5, "+Inf"],
                        ["9" * 400, "3"],
                        [-1e11, "4"],
                        [NOW, "50"],
                    ],
                },
                {"metric": {"instance": "n2", "gpu": "1"}, "values": [["-Inf", "1"], [NOW, "2"]]},
            ]
            return self._send(_matrix(series))
        return self._send(_matrix([]))


@pytest.fixture
def server():
    yield from servers(_Hostile)


def test_a_trickle_ends_at_the_whole_request_deadline(server):
    url = server("trickle")
    t0 = time.monotonic()
    with pytest.raises(FetchError, match="deadline"):
        get(url + "/api/v1/query", deadline_s=1.0)
    assert time.monotonic() - t0 < 10  # a per-read timeout would wait for ever (a byte every 2 s)


def test_a_redirect_to_another_host_or_scheme_is_refused_and_same_origin_is_reported(server):
    other = server("ok")  # another port on the same host: another origin
    with pytest.raises(FetchError, match="another origin"):
        get(server("redirect-host", other=other) + "/api/v1/query", deadline_s=5)
    with pytest.raises(FetchError, match="another origin"):
        get(server("redirect-ftp") + "/api/v1/query", deadline_s=5)
    answer = get(server("redirect-same") + "/api/v1/query", deadline_s=5)
    assert answer.status == 200 and len(answer.redirects) == 1 and "/moved" in answer.redirects[0]


def test_only_http_and_https_are_fetched():
    for url in ("ftp://127.0.0.1/x", "file:///etc/passwd", "gopher://x"):
        with pytest.raises(FetchError, match="only http"):
            get(url, deadline_s=1)


def test_labels_are_escaped_non_finite_and_absurd_times_left_out(server):
    r = PrometheusReader(server("nasty"), clock=lambda: NOW, timeout_s=5)
    view = r.fleet(600, fields=("util_gpu_pct",))
    text = format_fleet(view)
    assert "\x1b" not in text and "\x07" not in text  # no title set, no screen cleared
    assert not any(line.lstrip().startswith("forged row") for line in text.splitlines())  # no forged row
    doc = json.dumps(view.to_dict(), allow_nan=False)  # no NaN/Infinity reaches the JSON
    assert "\\u001b" not in doc
    for s in view.series:
        assert all(0 <= t <= NOW for t, _ in s.points)
    assert any(s.gpu == "²" for s in view.series)  # sorted after the digits, not an internal error


def test_more_series_than_the_view_takes_is_refused_saying_so(server):
    r = PrometheusReader(server("many"), clock=lambda: NOW, timeout_s=20)
    with pytest.raises(PrometheusError, match="more than 20,000 series"):
        r.fleet(600, fields=("util_gpu_pct",))


def test_a_long_error_text_is_cut(server, capsys):
    rc = main(["monitor", "--prometheus", server("huge-error")])
    err = capsys.readouterr().err
    assert rc == 1 and len(err) < 2000 and "internal error" not in err


def test_the_cli_refuses_a_redirect_to_ftp_in_one_line(server, capsys):
    rc = main(["monitor", "--prometheus", server("redirect-ftp")])
    err = capsys.readouterr().err
    assert rc == 1 and "another origin" in err and "internal error" not in err
    assert len(err.strip().splitlines()) == 1


def test_prometheus_own_error_is_quoted_inside_a_sentence_of_ours(server, capsys):
    """Prometheus' error text is its own (English): German frames it and marks it «…»; English as before."""
    from english_left import english_left

    url = server("huge-error")
    assert main(["monitor", "--prometheus", url]) == 1
    english = capsys.readouterr().err
    assert main(["--lang", "de", "monitor", "--prometheus", url]) == 1
    german = capsys.readouterr().err
    assert ": bad_data: xxx" in english and "«" not in english and english.startswith("error: ")
    assert (
        german.startswith("Fehler: ") and "Prometheus antwortete mit einem Fehler: «bad_data: xxx" in german
    )
    assert german.rstrip().endswith("»") and not english_left(german, "de")
