"""Every price says where it comes from, in words a CFO reads and in every language: "list price,
<source>, <date>; a lower bound at roofline throughput" (aiworkbook.sizing.prices), on the command
line (`size`, `fit --prices FILE`), on the sizing dashboard and in the report."""

from __future__ import annotations

import json
import re

import pytest
from profile_fakes import priced_profile

from aiworkbook.catalogue import languages, template
from aiworkbook.cli import main
from aiworkbook.paths import data_dir
from aiworkbook.profile.report import build, render_markdown
from aiworkbook.sizing import Assumptions, Workload
from aiworkbook.sizing.prices import list_provenance, provenance
from aiworkbook.specs import get_gpu, list_gpus
from aiworkbook.specs.gpu import set_prices

INFER = Workload(mode="infer", seq_len=4096, new_tokens=512, concurrency=8)


@pytest.fixture
def price_file(tmp_path):
    f = tmp_path / "prices.json"
    f.write_text(json.dumps({"source": "our contract", "date": "2026-11-15", "prices": {"L4": 0.35}}))
    yield f
    set_prices(None)


def test_the_catalogues_source_is_the_translated_sentence():
    # the catalogue's own words are what the English message says, so nl and de translate exactly them
    doc = json.loads((data_dir() / "gpus" / "gpus.json").read_text())
    assert template("price.catalogue_source") == doc["price_source"]
    l4 = get_gpu("L4")
    said = provenance(None, l4)
    assert (
        said
        == f"list price, {doc['price_source']}, {doc['price_date']}; a lower bound at roofline throughput"
    )
    words = {lang: said.render(lang) for lang in languages()}
    assert len(set(words.values())) == len(words) and all(doc["price_date"] in w for w in words.values())
    assert list_provenance(list_gpus()) == [said]  # one catalogue, one source: one line under a table


def test_a_given_price_and_a_price_file_say_so(price_file):
    assert provenance(Assumptions(price_per_gpu_hour=2.0, source="node x"), get_gpu("L4")) == (
        "price given (node x); a lower bound at roofline throughput"
    )
    set_prices(str(price_file))
    assert provenance(None, get_gpu("L4")).startswith("price from your price file, our contract, 2026-11-15")
    assert len(list_provenance(list_gpus())) == 2  # the file's L4 and the catalogue's others


def test_size_with_price_says_the_price_was_given(capsys):
    assert main(["size", "llama-3-8b", "--mode", "infer", "--gpu", "L40S", "--price", "2.5"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("answer:"))
    assert "(price given (defaults, --price); a lower bound at roofline throughput)" in line


def test_fit_takes_a_price_file_and_says_whose_price_it_is(price_file, capsys):
    argv = ["fit", "llama-3-8b", "--mode", "infer", "--gpu", "L4"]
    catalogue_price = get_gpu("L4").price_per_hour_usd
    assert main([*argv, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["answer"]
    assert main([*argv, "--json", "--prices", str(price_file)]) == 0
    mine = json.loads(capsys.readouterr().out)["answer"]
    assert mine["price_words"].startswith("price from your price file, our contract, 2026-11-15")
    assert listed["price_words"].startswith("list price, ")
    assert listed["fits"] and listed["runs_on"] == mine["runs_on"] == {"gpu": "L4", "gpus": 1, "mig": None}
    assert mine["usd_per_mtok"] == pytest.approx(listed["usd_per_mtok"] * 0.35 / catalogue_price)
    assert main([*argv, "--prices", str(price_file)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("answer:"))
    assert (
        "(price from your price file, our contract, 2026-11-15; a lower bound at roofline throughput)" in line
    )
    price_file.write_text(json.dumps({"source": "", "date": "2026-11-15", "prices": {"L4": 0.35}}))
    assert main([*argv, "--prices", str(price_file)]) == 2
    assert "prices.source" in capsys.readouterr().err


@pytest.mark.timeout(120)
@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_sizer_says_where_its_prices_come_from(lang):
    from aiworkbook.widgets import ModelSizer

    s = ModelSizer(lang=lang, background=False)
    try:
        said = provenance(None, get_gpu("H100-SXM")).render(lang)
        assert said in s.cost.value  # beside the headline's price
        table = re.sub(r"<[^>]+>", " ", s.fits_table.value)
        assert said in table and "aiwb-price-source" in s.fits_table.value  # under the table's prices
    finally:
        s.close()


@pytest.fixture(scope="module")
def prof():
    return priced_profile(
        {"name": "chat", "model": "llama-3-8b", "gpu": "H100-SXM", "workload": INFER},
        {"name": "tune", "model": "tiny-llama", "workload": Workload(mode="lora", batch=1, seq_len=128)},
    )


def test_the_report_says_where_each_price_comes_from(prof):
    md = render_markdown(prof)
    listed = str(provenance(None, get_gpu("H100-SXM")))
    node = "price given (node inference-4xl40s); a lower bound at roofline throughput"
    head, _, rest = md.partition("## Decision")
    assert listed in head and node in head  # under the headlines that quote the prices
    cost = md.split("## Cost", 1)[1].split("\n## ", 1)[0]
    assert cost.count(listed) >= 2 and node in cost  # the cost table, the monthly table, the options
    for lang in ("nl", "de"):
        blocks = build(prof, lang, charts=False)
        said = provenance(None, get_gpu("H100-SXM")).render(lang)
        assert any(b.kind == "p" and b.text.startswith(said) for b in blocks)
