"""Random multi-op graphs (2-8 ops, two-input ops, geometry mid-chain,
shared subgraphs) and a fixed regression set, all through one `imgbatch run`.

Every generated graph is one Pillow runs, so any answer but exact bytes -
an Unsupported included - fails and prints the graph's JSON recipe: paste it
into graphs_regression.json (with a "name") to keep it.
"""
import json
import os

import graphgen
import parity
import pytest
from parity import Case

N_RANDOM = parity.scale(500)
HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "graphs_regression.json")) as f:
    REGRESSION = json.load(f)["graphs"]


def _random_recipes():
    return [graphgen.generate(parity.rng("graph", i)) for i in range(N_RANDOM)]


@pytest.fixture(scope="module")
def outcomes():
    recipes = [("random", i, rec) for i, rec in enumerate(_random_recipes())]
    recipes += [("regression", g["name"], g["recipe"]) for g in REGRESSION]
    cases = []
    for kind, ident, rec in recipes:
        image = graphgen.build(rec)
        cases.append(Case(f"{kind}-{ident}", f"{kind} graph", image.mode, image))
    results = parity.run_cases(cases)
    return {o.case.case_id: (o, rec) for o, (_, _, rec) in zip(results, recipes)}


def _verdict(outcome, recipe):
    o = outcome
    if o.status == "exact":
        return
    text = json.dumps(recipe)
    pytest.fail(f"{o.case.case_id} {o.status}: {o.detail}\nops {graphgen.ops_of(recipe)}\n"
                f"recipe: {text}\nIB_PARITY_SEED={parity.SEED}", pytrace=False)


@pytest.mark.parametrize("i", range(N_RANDOM), ids=lambda i: f"graph{i}")
def test_random_graph_matches_pillow(i, outcomes):
    _verdict(*outcomes[f"random-{i}"])


@pytest.mark.parametrize("name", [g["name"] for g in REGRESSION])
def test_regression_graph_matches_pillow(name, outcomes):
    _verdict(*outcomes[f"regression-{name}"])


def test_random_graphs_cover_every_op_and_shape_rule():
    recipes = _random_recipes()
    for rec in recipes:
        assert 2 <= len(graphgen.ops_of(rec)) <= 8
    # The generator reaches every op: judged on enough recipes (generating
    # is cheap, running is not) that a seed's luck cannot miss a rare one -
    # the executed graphs alone, at a small IB_PARITY_SCALE, may.
    ops = set()
    for i in range(max(1000, 4 * N_RANDOM)):
        ops.update(graphgen.ops_of(graphgen.generate(parity.rng("graph-cover", i))))
    assert ops == set(graphgen.APPLY) - {"source"}
    two_input = sum(any(len(s["in"]) == 2 for s in rec["steps"]) for rec in recipes)
    shared = sum(any(sum(i in s["in"] for s in rec["steps"]) > 1
                     for i in range(len(rec["steps"]))) for rec in recipes)
    assert two_input > N_RANDOM // 5 and shared > N_RANDOM // 10
