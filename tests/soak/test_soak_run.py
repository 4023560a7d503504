"""The soak run's bookkeeping (soak.Run): every resident image it is answered
with is downloaded once and released, repeats included, so that the credits a
run leaves in use are the workers', not the reader's; and a worker that exits
unasked stops the run and is named."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak  # noqa: E402

from imgbatch import imgbatch_pb2 as pb  # noqa: E402


def reader():
    run = soak.Run.__new__(soak.Run)  # no broker, no workers: only the bookkeeping
    run._books()
    run.sent = []
    run._control = lambda command, handle=None: run.sent.append(command)
    return run


def resident(worker, handle_id):
    return pb.Result(resident=pb.HandleRef(worker_id=worker, handle_id=handle_id, generation=1))


def commands(run):
    return [(c.WhichOneof("command"), getattr(c, c.WhichOneof("command")).handle.handle_id)
            for c in run.sent]


def test_a_job_redone_by_another_worker_has_its_second_handle_released():
    run = reader()
    run.on_result("imgbatch.jobs/3/17", resident("w0", 11))
    run.on_result("imgbatch.jobs/3/17", resident("w1", 22))  # the partition's new owner
    assert commands(run) == [("download", 11), ("release", 22)]
    assert run.repeat_residents == 1 and run.released == 1


def test_the_same_result_published_again_is_released_once():
    run = reader()
    run.on_result("imgbatch.jobs/0/5", resident("w0", 7))
    run.on_result("imgbatch.jobs/0/5", resident("w0", 7))
    assert commands(run) == [("download", 7)]
    assert run.repeat_residents == 0


def test_a_repeat_that_is_not_resident_sends_nothing():
    run = reader()
    run.on_result("imgbatch.jobs/1/2", pb.Result(error=pb.JobError(message="late")))
    run.on_result("imgbatch.jobs/1/2", pb.Result(error=pb.JobError(message="late")))
    assert run.sent == [] and run.answered == {"imgbatch.jobs/1/2": "error"}


class Exited:
    def __init__(self, code):
        self.returncode = code

    def poll(self):
        return self.returncode


def test_a_running_worker_that_exits_is_named_and_a_retired_one_is_not():
    run = reader()
    run.workers = [soak.Worker.__new__(soak.Worker), soak.Worker.__new__(soak.Worker)]
    run.workers[0].wid, run.workers[0].proc = "soak0-0", Exited(None)
    run.workers[1].wid, run.workers[1].proc = "soak1-0", Exited(2)
    assert run.died() == [("soak1-0", 2)]
    run.workers.pop()  # restarted: the exit was asked for
    assert run.died() == []


class Sent:
    """A delivered Job as the delivery report sees it."""

    def __init__(self, part, offset, value):
        self.part, self.off, self.data = part, offset, value

    def topic(self):
        return soak.JOBS

    def partition(self):
        return self.part

    def offset(self):
        return self.off

    def value(self):
        return self.data


def test_a_partition_holds_at_most_its_bytes_of_unanswered_jobs():
    # The embedded broker deletes a partition's oldest messages past 5 MiB,
    # consumed or not: jobs go out round robin while their partition's
    # unanswered bytes stay within PART_BYTES, and the next waits otherwise.
    run = reader()
    run.args = type("Args", (), {"jobs": 10, "window": 100})()
    run.job_parts = 2
    big = b"x" * (soak.PART_BYTES * 3 // 4)
    run.workload = type("W", (), {"next": staticmethod(lambda: (big, "image"))})()
    out = []

    class Producer:
        def produce(self, topic, data, partition, on_delivery):
            out.append((partition, on_delivery))

        def poll(self, timeout):
            pass
    run.producer = Producer()
    run.produce()
    assert [p for p, _ in out] == [0, 1], "the third, for partition 0, waits for room"
    out[0][1](None, Sent(0, 0, big))  # delivered; its partition still holds it
    run.produce()
    assert len(out) == 2
    run.on_result("imgbatch.jobs/0/0", pb.Result(error=pb.JobError(message="x")))
    run.produce()
    assert [p for p, _ in out] == [0, 1, 0], "answered: partition 0 has room again"
    # A Result read before its Job's delivery report frees the room at the report.
    run.on_result("imgbatch.jobs/1/0", pb.Result(error=pb.JobError(message="x")))
    out[1][1](None, Sent(1, 0, big))
    run.produce()
    assert [p for p, _ in out] == [0, 1, 0, 1]
    assert run.part_bytes == {0: len(big), 1: len(big)}
