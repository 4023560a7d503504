"""The parity suite's graph generator writes every op of the op table
(worker/ops/ops.def) but those it names in NOT_GENERATED, and nothing else."""
import random

import graphgen
from imgbatch._optable import OPS


def test_generated_graphs_cover_every_op_of_the_table():
    seen = set()
    r = random.Random(20261205)
    for _ in range(300):
        job = graphgen.build(graphgen.generate(r)).to_job_message()
        seen.update(node.WhichOneof("op") for node in job.nodes)
    table = {op.field for op in OPS}
    assert set(graphgen.NOT_GENERATED) <= table
    assert seen <= table
    assert seen == table - set(graphgen.NOT_GENERATED), sorted(table - seen - set(graphgen.NOT_GENERATED))
