#!/usr/bin/env python3
"""Checks of bench/fanout_sim.py's model: python3 bench/fanout_sim_test.py (stdlib unittest)."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fanout_sim  # noqa: E402

MiB = 2 ** 20
S = 64 * MiB

# Upload-bound: a fast upstream, 1 Gbit/s NICs, negligible latencies, clients not on the NIC.
UPLOAD_BOUND = ["--size", "64MiB", "--upstream-bw", "100Gbit", "--upload", "1Gbit", "--download", "1Gbit",
                "--hop", "0.01", "--entity-rtt", "0.01", "--upstream-ttfb", "0.01", "--clients-local"]


def run(*args):
    return fanout_sim.simulate([str(a) for a in args])


class OneNode(unittest.TestCase):
    def test_one_node_sends_no_peer_bytes(self):
        for strategy in ("owner", "fanout"):
            r = run("--strategy", strategy, "--nodes", 1, "--size", "64MiB")
            self.assertEqual(0, r["peer_bytes_total"], strategy)
            self.assertEqual(0, r["copies_total"], strategy)
            self.assertEqual(1, r["upstream_requests"], strategy)


class Owner(unittest.TestCase):
    def test_the_owner_sends_every_copy(self):
        for n in (2, 3, 10, 50):
            r = run("--strategy", "owner", "--nodes", n, "--size", "64MiB")
            self.assertAlmostEqual((n - 1) * S, r["owner_peer_egress_bytes"], delta=1, msg=n)
            self.assertAlmostEqual((n - 1) * S, r["peer_bytes_total"], delta=1, msg=n)
            self.assertEqual(1 if n > 1 else 0, r["chain_depth"])

    def test_the_other_nodes_stream_the_owners_download_while_it_grows(self):
        # upstream-bound: the copies go as fast as the owner's download, so they end with it
        r = run("--strategy", "owner", "--nodes", 3, "--size", "64MiB", "--upstream-bw", "100MiB",
                "--upload", "10Gbit", "--download", "10Gbit", "--clients", 0)
        self.assertLess(r["all_hold_s"] - r["first_commit_s"], 0.02)


class Fanout(unittest.TestCase):
    def test_no_holder_runs_more_than_cap_uploads_and_every_node_gets_one_copy(self):
        for cap in (1, 2, 3):
            for pick in ("least", "two"):
                for n in (7, 40):
                    r = run("--nodes", n, "--cap", cap, "--pick", pick, "--size", "64MiB")
                    what = "cap %d, %s, %d nodes" % (cap, pick, n)
                    self.assertLessEqual(r["concurrent_uploads_max"], cap, what)
                    self.assertAlmostEqual((n - 1) * S, r["peer_bytes_total"], delta=1, msg=what)
                    self.assertEqual(n - 1, r["copies_total"], what)

    def test_when_every_node_is_pointed_before_a_copy_ends_a_holder_sends_at_most_cap_times_s(self):
        # (a slot freed by a finished copy may take another node: the cap bounds uploads at once,
        # so egress is bounded by cap x S only when the tree is built before any copy ends)
        for cap in (1, 2, 3):
            for n in (7, 40, 300):
                r = run("--nodes", n, "--cap", cap, "--wait-bound", "inf", *UPLOAD_BOUND)
                self.assertLessEqual(r["peer_egress_max_bytes"], cap * S + 1, "cap %d, %d nodes" % (cap, n))

    def test_least_loaded_with_chained_streaming_builds_a_tree_of_log_depth(self):
        for cap in (1, 2, 3):
            r = run("--nodes", 100, "--cap", cap, *UPLOAD_BOUND)
            if cap == 1:
                self.assertEqual(99, r["chain_depth"])  # cap 1 is a chain through every node
            else:
                self.assertLessEqual(r["chain_depth"], math.ceil(math.log(100, cap + 1)) + 1, cap)

    def test_past_the_wait_bound_a_node_goes_to_the_owner(self):
        bounded = run("--nodes", 30, "--cap", 1, "--no-chain", "--wait-bound", 50)
        self.assertGreater(bounded["went_to_owner_past_wait_bound"], 0)
        self.assertGreater(bounded["owner_peer_egress_bytes"], S + 1)
        self.assertLessEqual(bounded["concurrent_uploads_max_not_owner"], 1, "only E goes past the cap")
        unbounded = run("--nodes", 30, "--cap", 1, "--no-chain", "--wait-bound", "inf")
        self.assertEqual(0, unbounded["went_to_owner_past_wait_bound"])
        self.assertLessEqual(unbounded["concurrent_uploads_max"], 1)

    def test_batched_record_writes_are_fewer_than_one_per_holder(self):
        one_each = run("--nodes", 200, "--db-write", 5, "--one-write-per-holding")
        batched = run("--nodes", 200, "--db-write", 5)
        self.assertEqual(200, one_each["record_writes"])
        self.assertLess(batched["record_writes"], 50)
        self.assertLess(batched["record_last_written_s"], one_each["record_last_written_s"])


class Stripes(unittest.TestCase):
    KRAKEN_SHAPE = ["--nodes", 300, "--size", "3GB", "--upload", "300MB", "--download", "300MB",
                    "--clients-local", "--upstream-bw", "10Gbit", "--owner-nic", "10Gbit"]

    def test_stripes_move_every_byte_once_per_node_and_each_inner_node_sends_about_s(self):
        for k in (2, 4):
            r = run(*self.KRAKEN_SHAPE, "--stripes", k, "--cap", k)
            self.assertAlmostEqual(299 * 3e9, r["peer_bytes_total"], delta=1e3, msg=k)
            self.assertEqual(1, r["upstream_requests"])
            self.assertAlmostEqual(3e9, r["upstream_bytes"], delta=1, msg=k)
            self.assertLessEqual(r["concurrent_uploads_max_not_owner"], k)
            # a node serves only its own stripe: k copies of S/k, about S in all
            self.assertLessEqual(r["peer_egress_max_not_owner_bytes"], 3e9 + 1, k)

    def test_stripes_reach_the_download_rate_a_whole_body_tree_cannot(self):
        at_line_rate = 3e9 / 300e6   # 10 s
        whole = run(*self.KRAKEN_SHAPE, "--cap", 2)
        striped = run(*self.KRAKEN_SHAPE, "--stripes", 4, "--cap", 4)
        self.assertGreater(whole["commit_p50_s"], 1.9 * at_line_rate)   # each child gets U/2
        # the last stripe reaches E only after 3/4 of E's one upstream download (1.8 s here)
        self.assertLess(striped["commit_p50_s"], 1.25 * at_line_rate)


class Growth(unittest.TestCase):
    """Under upload-bound settings: owner ~N, fanout ~log N (store-and-forward), ~flat (chained)."""

    def time(self, strategy, n, *extra):
        return run("--strategy", strategy, "--nodes", n, *(UPLOAD_BOUND + list(extra)))["all_hold_s"]

    def test_owner_grows_linearly(self):
        t10, t100 = self.time("owner", 10), self.time("owner", 100)
        self.assertAlmostEqual(99 / 9, t100 / t10, delta=0.5)

    def test_fanout_without_chaining_grows_with_log_n(self):
        t = {n: self.time("fanout", n, "--cap", 1, "--no-chain", "--wait-bound", "inf") for n in (8, 64, 512)}
        # cap 1, store-and-forward: the holders double each round of one copy time (S / upload)
        one_copy = S / fanout_sim.bandwidth("1Gbit")
        for n in t:
            self.assertAlmostEqual(math.log2(n), t[n] / one_copy, delta=0.6, msg=n)
        self.assertLess(t[512] / t[8], 4)

    def test_fanout_with_chaining_is_nearly_flat_in_n(self):
        t10, t1000 = self.time("fanout", 10), self.time("fanout", 1000)
        self.assertLess(t1000 / t10, 1.1)
        self.assertLess(t1000, self.time("owner", 10) / 2)


class Upstream(unittest.TestCase):
    def test_one_upstream_request_and_one_body_whatever_the_strategy(self):
        for args in (["--strategy", "owner", "--nodes", 17], ["--nodes", 17], ["--nodes", 17, "--pick", "two"],
                     ["--nodes", 17, "--cap", 1, "--wait-bound", 10], ["--nodes", 17, "--no-chain"],
                     ["--calibrated", "--nodes", 10], ["--nodes", 1000]):
            r = run("--size", "64MiB", *args)
            self.assertEqual(1, r["upstream_requests"], args)
            self.assertAlmostEqual(S, r["upstream_bytes"], delta=1, msg=args)


class Calibration(unittest.TestCase):
    def test_the_calibrated_owner_model_reproduces_o1(self):
        # docs/benchmarks.md O1 (measured): last puller's last byte 14.8 s, TTFB 0.70 / 1.45 s
        r = run("--calibrated", "--strategy", "owner", "--nodes", 3)
        self.assertAlmostEqual(14.8, r["last_client_last_byte_s"], delta=1.5)
        self.assertAlmostEqual(0.70, r["ttfb_first_s"], delta=0.1)
        self.assertAlmostEqual(1.45, r["ttfb_last_s"], delta=0.1)

    def test_the_ten_node_calibration_reproduces_the_owner_only_run(self):
        # docs/benchmarks.md "Fan-out" (measured, bench/fanout.sh --nodes 10, owner-only): every node
        # held the layer at 28.1 / 29.4 s, first head first / last 1.70 / 4.40 and 2.10 / 5.44 s, 9x egress
        r = run("--calibrated", "ten", "--strategy", "owner", "--nodes", 10)
        self.assertAlmostEqual(28.8, r["all_hold_s"], delta=2.0)
        self.assertAlmostEqual(1.9, r["ttfb_first_s"], delta=0.25)
        self.assertAlmostEqual(3.0, r["ttfb_spread_s"], delta=0.4)
        self.assertEqual(9.0, r["peer_egress_max_x"])

    def test_the_ten_node_fanout_calibration_reproduces_the_fanout_run(self):
        # docs/benchmarks.md "Fan-out" (measured, bench/fanout.sh --nodes 10 with --peer-fanout on,
        # bench/results/fanout-10n-20261206T092006Z.json): every node held the layer at 33.08 s, first
        # heads 1.39 / 8.04 s (last - first 6.66 s), the node that fetched sent 2 copies, three other
        # nodes 2 each, one 1, the other five none; one upstream request. upload is fitted to the
        # first, hop to the spread: both within the measured figure's +-5 %; the egress is not fitted.
        r = run("--calibrated", "ten-fanout", "--strategy", "fanout", "--nodes", 10)
        self.assertAlmostEqual(33.08, r["all_hold_s"], delta=0.05 * 33.08)
        self.assertAlmostEqual(1.39, r["ttfb_first_s"], delta=0.05)
        self.assertAlmostEqual(6.66, r["ttfb_spread_s"], delta=0.05 * 6.66)
        self.assertEqual(2.0, r["peer_egress_max_x"])
        self.assertEqual(2, r["copies_sent_by_node"][0])
        self.assertEqual([2, 2, 2, 2, 1, 0, 0, 0, 0, 0], sorted(r["copies_sent_by_node"], reverse=True))
        self.assertEqual(1, r["upstream_requests"])

    def test_the_fanout_fit_does_not_carry_over_to_owner_only_on_one_machine(self):
        # The same machine, the same run, owner-only: every node held it at 29.6 s. With the fan-out
        # fit's per-node upload the owner model is more than twice that: on 2 shared cores a node's
        # "NIC" is its share of the CPU, which depends on how many nodes upload at once. The
        # calibration is per mode; this keeps anyone from quoting one for the other.
        r = run("--calibrated", "ten-fanout", "--strategy", "owner", "--nodes", 10)
        self.assertGreater(r["all_hold_s"], 2 * 29.6)


if __name__ == "__main__":
    unittest.main()
