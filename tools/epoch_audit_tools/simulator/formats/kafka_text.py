"""Kafka log4j message templates per version (reference §1, §2, §3.1 replay lines, §4.3, §6).

Each function returns ``(level, message, logger)``; :class:`epoch_audit_tools.simulator.formats.common.Log4j` adds
the line prefix. Message texts are copied from the reference templates; the version switches
follow the reference's version columns exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

from epoch_audit_tools.simulator.formats.common import (
    Version,
    bracket_comma,
    comma,
    java_list,
    jbool,
    scala_keyset,
    scala_list,
    scala_option,
)

Line = tuple[str, str, str]

SCL = "state.change.logger"
PARTITION = "kafka.cluster.Partition"
FETCHER_MGR = "kafka.server.ReplicaFetcherManager"
FETCHER = "kafka.server.ReplicaFetcherThread"
REPLICA_MGR = "kafka.server.ReplicaManager"
KAFKA_CONTROLLER = "kafka.controller.KafkaController"
LOG_MANAGER = "kafka.log.LogManager"


# -- value forms ----------------------------------------------------------------------------
def lai_partition_state(
    v: Version,
    topic: str,
    partition: int,
    controller_epoch: int,
    leader: int,
    leader_epoch: int,
    isr: Sequence[int],
    partition_epoch: int,
    replicas: Sequence[int],
    is_new: bool = False,
) -> str:
    """``LeaderAndIsrPartitionState(...)`` (§0.3): ``zkVersion=`` up to 3.2, recovery state from 3.2."""
    pe_key = "partitionEpoch" if v.at_least("3.3") else "zkVersion"
    text = (
        f"LeaderAndIsrPartitionState(topicName='{topic}', partitionIndex={partition}, "
        f"controllerEpoch={controller_epoch}, leader={leader}, leaderEpoch={leader_epoch}, "
        f"isr={java_list(isr)}, {pe_key}={partition_epoch}, replicas={java_list(replicas)}, "
        f"addingReplicas=[], removingReplicas=[], isNew={jbool(is_new)}"
    )
    if v.at_least("3.2"):
        text += ", leaderRecoveryState=0"
    return text + ")"


def stop_replica_partition_state(partition: int, leader_epoch: int, delete: bool) -> str:
    """``StopReplicaPartitionState(...)`` (§0.3)."""
    return (
        f"StopReplicaPartitionState(partitionIndex={partition}, leaderEpoch={leader_epoch}, "
        f"deletePartition={jbool(delete)})"
    )


def api_leader_and_isr(
    v: Version, leader: int, leader_epoch: int, isr: Sequence[int], partition_epoch: int
) -> str:
    """``kafka.api.LeaderAndIsr`` toString (§0.3 table)."""
    if v.at_least("3.5"):
        states = scala_list(f"BrokerState(brokerId={r}, brokerEpoch=-1)" for r in isr)
        return (
            f"LeaderAndIsr(leader={leader}, leaderEpoch={leader_epoch}, isrWithBrokerEpoch={states}, "
            f"leaderRecoveryState=RECOVERED, partitionEpoch={partition_epoch})"
        )
    if v.at_least("3.3"):
        return (
            f"LeaderAndIsr(leader={leader}, leaderEpoch={leader_epoch}, isr={scala_list(isr)}, "
            f"leaderRecoveryState=RECOVERED, partitionEpoch={partition_epoch})"
        )
    if v.at_least("3.2"):
        return (
            f"LeaderAndIsr(leader={leader}, leaderEpoch={leader_epoch}, isr={scala_list(isr)}, "
            f"leaderRecoveryState=RECOVERED, zkVersion={partition_epoch})"
        )
    return (
        f"LeaderAndIsr(leader={leader}, leaderEpoch={leader_epoch}, isr={scala_list(isr)}, "
        f"zkVersion={partition_epoch})"
    )


def leader_isr_and_controller_epoch(
    v: Version, leader: int, isr: Sequence[int], leader_epoch: int, zk_version: int, controller_epoch: int
) -> str:
    """ZK controller ``LeaderIsrAndControllerEpoch`` (§0.3 second table)."""
    if v.at_least("3.2"):
        return (
            f"(Leader:{leader},ISR:{comma(isr)},LeaderRecoveryState:RECOVERED,LeaderEpoch:{leader_epoch},"
            f"ZkVersion:{zk_version},ControllerEpoch:{controller_epoch})"
        )
    if v.at_least("3.1"):
        return (
            f"(Leader:{leader},ISR:{comma(isr)},LeaderEpoch:{leader_epoch},ZkVersion:{zk_version},"
            f"ControllerEpoch:{controller_epoch})"
        )
    return f"(Leader:{leader},ISR:{comma(isr)},LeaderEpoch:{leader_epoch},ControllerEpoch:{controller_epoch})"


# -- broker state-change: partition transitions (§1.2) ---------------------------------------
def leader_line(
    v: Version,
    broker: int,
    tp: str,
    topic_id: str,
    leader_epoch: int,
    start_offset: int,
    partition_epoch: int,
    hw: int,
    isr: Sequence[int],
    prev_leader: int | None,
    prev_epoch: int,
) -> Line:
    """``Leader <tp> ... starts at leader epoch N from offset O ... high watermark H``."""
    p = f"[Broker id={broker}] "
    if not v.at_least("3.3"):
        msg = (
            f"Leader {tp} starts at leader epoch {leader_epoch} from offset {start_offset} with high "
            f"watermark {hw} ISR {bracket_comma(isr)} addingReplicas [] removingReplicas []. "
            f"Previous leader epoch was {prev_epoch}."
        )
    else:
        head = (
            f"Leader {tp} with topic id Some({topic_id}) starts at leader epoch {leader_epoch} from offset "
            f"{start_offset} with partition epoch {partition_epoch}, high watermark {hw}, "
            f"ISR {bracket_comma(isr)}, adding replicas [] and removing replicas []"
        )
        if not v.at_least("3.5"):
            msg = f"{head}. Previous leader epoch was {prev_epoch}."
        elif not v.at_least("3.6"):
            # 3.5+: "<underMinIsr>" is empty here, hence the space before the period
            msg = f"{head} . Previous leader epoch was {prev_epoch}."
        else:
            msg = f"{head} . Previous leader {scala_option(prev_leader)} and previous leader epoch was {prev_epoch}."
    return "INFO", p + msg, SCL


def follower_line(
    v: Version,
    broker: int,
    tp: str,
    leader_epoch: int,
    end_offset: int,
    partition_epoch: int,
    hw: int,
    leader: int,
    prev_leader: int | None,
    prev_epoch: int,
) -> Line:
    """``Follower <tp> starts at leader epoch N ...`` with the 3.6–3.9 "previous" quirk."""
    p = f"[Broker id={broker}] "
    if not v.at_least("3.3"):
        msg = (
            f"Follower {tp} starts at leader epoch {leader_epoch} from offset {end_offset} with high "
            f"watermark {hw}. Previous leader epoch was {prev_epoch}."
        )
    elif not v.at_least("3.6"):
        msg = (
            f"Follower {tp} starts at leader epoch {leader_epoch} from offset {end_offset} with partition "
            f"epoch {partition_epoch} and high watermark {hw}. Current leader is {leader}. "
            f"Previous leader epoch was {prev_epoch}."
        )
    else:
        # KAFKA-19776: makeFollower stores the new leader/epoch before logging, so the
        # "previous" values printed are the ones being installed.
        msg = (
            f"Follower {tp} starts at leader epoch {leader_epoch} from offset {end_offset} with partition "
            f"epoch {partition_epoch} and high watermark {hw}. Current leader is {leader}. "
            f"Previous leader {scala_option(leader)} and previous leader epoch was {leader_epoch}."
        )
    return "INFO", p + msg, SCL


def skipped_follower_line(broker: int, tp: str, topic_id: str, state: str, leader_epoch: int) -> Line:
    """3.3+: ``Skipped the become-follower state change ... already a follower with leader epoch N.``"""
    return (
        "INFO",
        f"[Broker id={broker}] Skipped the become-follower state change for {tp} with topic id "
        f"Some({topic_id}) and partition state {state} since it is already a follower with leader "
        f"epoch {leader_epoch}.",
        SCL,
    )


def kraft_transitioning(broker: int, count: int, leaders: bool) -> Line:
    """§1.4 ``Transitioning N partition(s) to local leaders|followers.``"""
    kind = "leaders" if leaders else "followers"
    return "INFO", f"[Broker id={broker}] Transitioning {count} partition(s) to local {kind}.", SCL


def kraft_deleting(broker: int, count: int) -> Line:
    """§1.4 ``Deleting N partition(s).``"""
    return "INFO", f"[Broker id={broker}] Deleting {count} partition(s).", SCL


def kraft_stopped_fetchers_cs(broker: int, count: int) -> Line:
    """§1.4 ``Stopped fetchers as part of controlled shutdown for N partitions``."""
    return (
        "INFO",
        f"[Broker id={broker}] Stopped fetchers as part of controlled shutdown for {count} partitions",
        SCL,
    )


# -- ZK broker: LeaderAndIsr / StopReplica / UpdateMetadata (§1.1, §1.2, §1.5) --------------
def lai_handling(broker: int, corr: int, controller: int, count: int) -> Line:
    """L1."""
    return (
        "INFO",
        f"[Broker id={broker}] Handling LeaderAndIsr request correlationId {corr} from controller "
        f"{controller} for {count} partitions",
        SCL,
    )


def lai_received(broker: int, state: str, corr: int, controller: int, cepoch: int) -> Line:
    """L2 (TRACE), no "for partition" tail."""
    return (
        "TRACE",
        f"[Broker id={broker}] Received LeaderAndIsr request {state} correlation id {corr} from "
        f"controller {controller} epoch {cepoch}",
        SCL,
    )


def lai_stale_epoch(broker: int, controller: int, corr: int, cepoch: int, tp: str, req: int, cur: int) -> Line:
    """L6 (WARN)."""
    return (
        "WARN",
        f"[Broker id={broker}] Ignoring LeaderAndIsr request from controller {controller} with correlation "
        f"id {corr} epoch {cepoch} for partition {tp} since its associated leader epoch {req} is smaller "
        f"than the current leader epoch {cur}",
        SCL,
    )


def lai_equal_epoch(broker: int, controller: int, corr: int, cepoch: int, tp: str, req: int) -> Line:
    """L7 (INFO)."""
    return (
        "INFO",
        f"[Broker id={broker}] Ignoring LeaderAndIsr request from controller {controller} with correlation "
        f"id {corr} epoch {cepoch} for partition {tp} since its associated leader epoch {req} matches "
        f"the current leader epoch",
        SCL,
    )


def lai_finished(v: Version, broker: int, elapsed: int, corr: int, controller: int, count: int) -> Line | None:
    """L16, 2.7+."""
    if not v.at_least("2.7"):
        return None
    return (
        "INFO",
        f"[Broker id={broker}] Finished LeaderAndIsr request in {elapsed}ms correlationId {corr} from "
        f"controller {controller} for {count} partitions",
        SCL,
    )


def sr_handling(broker: int, corr: int, controller: int, count: int) -> Line:
    """S1."""
    return (
        "INFO",
        f"[Broker id={broker}] Handling StopReplica request correlationId {corr} from controller "
        f"{controller} for {count} partitions",
        SCL,
    )


def sr_received(broker: int, state: str, corr: int, controller: int, cepoch: int, tp: str) -> Line:
    """S2 (TRACE)."""
    return (
        "TRACE",
        f"[Broker id={broker}] Received StopReplica request {state} correlation id {corr} from controller "
        f"{controller} epoch {cepoch} for partition {tp}",
        SCL,
    )


def sr_fenced(broker: int, delete: bool, controller: int, corr: int, cepoch: int, tp: str, req: int, cur: int) -> Line:
    """S5 (WARN), the KIP-570 fence."""
    return (
        "WARN",
        f"[Broker id={broker}] Ignoring StopReplica request (delete={jbool(delete)}) from controller "
        f"{controller} with correlation id {corr} epoch {cepoch} for partition {tp} since its associated "
        f"leader epoch {req} is smaller than the current leader epoch {cur}",
        SCL,
    )


def sr_equal(broker: int, delete: bool, controller: int, corr: int, cepoch: int, tp: str, req: int) -> Line:
    """S6 (INFO), 2.6.0–3.4.0 only."""
    return (
        "INFO",
        f"[Broker id={broker}] Ignoring StopReplica request (delete={jbool(delete)}) from controller "
        f"{controller} with correlation id {corr} epoch {cepoch} for partition {tp} since its associated "
        f"leader epoch {req} matches the current leader epoch",
        SCL,
    )


def um_applied(broker: int, count: int, deleted: int, controller: int, cepoch: int, corr: int) -> Line:
    """U4."""
    return (
        "INFO",
        f"[Broker id={broker}] Add {count} partitions and deleted {deleted} partitions from metadata cache in "
        f"response to UpdateMetadata request sent by controller {controller} epoch {cepoch} with "
        f"correlation id {corr}",
        SCL,
    )


def removed_fetcher(broker: int, tps: Sequence[str]) -> Line:
    """``Removed fetcher for partitions Set(...)`` (AbstractFetcherManager)."""
    return (
        "INFO",
        f"[ReplicaFetcherManager on broker {broker}] Removed fetcher for partitions {scala_keyset(tps)}",
        FETCHER_MGR,
    )


def log_renamed(tp: str, path: str) -> Line:
    """LogManager, delete=true."""
    return "INFO", f"Log for partition {tp} is renamed to {path} and is scheduled for deletion", LOG_MANAGER


# -- ZK controller side (§1.3) --------------------------------------------------------------
def ctl_prefix(controller: int, cepoch: int) -> str:
    """``[Controller id=N epoch=E] ``."""
    return f"[Controller id={controller} epoch={cepoch}] "


def ctl_changed_partition(v: Version, c: int, ce: int, tp: str, frm: str, to: str, lai: str) -> Line:
    """``Changed partition <tp> from A to B with state <LeaderAndIsr>``."""
    return "INFO", ctl_prefix(c, ce) + f"Changed partition {tp} from {frm} to {to} with state {lai}", SCL


def ctl_isr_removed(c: int, ce: int, tp: str, lice: str, replica: int) -> Line:
    """``Partition <tp> state changed to (Leader:..) after removing replica R from the ISR ...``."""
    return (
        "INFO",
        ctl_prefix(c, ce) + f"Partition {tp} state changed to {lice} after removing replica {replica} from "
        "the ISR as part of transition to OfflineReplica",
        SCL,
    )


def ctl_send_lai_trace(c: int, ce: int, kind: str, state: str, broker: int, tp: str) -> Line:
    """TRACE ``Sending become-leader|become-follower LeaderAndIsr request <state> to broker B for partition``."""
    return (
        "TRACE",
        ctl_prefix(c, ce) + f"Sending {kind} LeaderAndIsr request {state} to broker {broker} for partition {tp}",
        SCL,
    )


def ctl_send_lai(c: int, ce: int, broker: int, leaders: int, followers: int) -> Line:
    """INFO ``Sending LeaderAndIsr request to broker B with N become-leader and M become-follower partitions``."""
    return (
        "INFO",
        ctl_prefix(c, ce) + f"Sending LeaderAndIsr request to broker {broker} with {leaders} become-leader and "
        f"{followers} become-follower partitions",
        SCL,
    )


def ctl_send_um(c: int, ce: int, brokers: Sequence[int], count: int) -> Line:
    """``Sending UpdateMetadata request to brokers HashSet(..) for N partitions`` (mutable set)."""
    bs = "HashSet(" + ", ".join(str(b) for b in sorted(brokers)) + ")"
    return "INFO", ctl_prefix(c, ce) + f"Sending UpdateMetadata request to brokers {bs} for {count} partitions", SCL


def ctl_send_sr_trace(c: int, ce: int, state: str, broker: int, tp: str) -> Line:
    """TRACE ``Sending StopReplica request <state> to broker B for partition <tp>``."""
    return "TRACE", ctl_prefix(c, ce) + f"Sending StopReplica request {state} to broker {broker} for partition {tp}", SCL


def ctl_send_sr(c: int, ce: int, count: int, broker: int) -> Line:
    """INFO ``Sending StopReplica request for N replicas to broker B`` (v3+)."""
    return "INFO", ctl_prefix(c, ce) + f"Sending StopReplica request for {count} replicas to broker {broker}", SCL


def ctl_elected(c: int, ce: int) -> Line:
    """KafkaController election line (controller.log)."""
    return (
        "INFO",
        f"[Controller id={c}] {c} successfully elected as the controller. Epoch incremented to {ce} and "
        f"epoch zk version is now {ce}",
        KAFKA_CONTROLLER,
    )


# -- ISR changes on the leader (§2.1, §2.2) --------------------------------------------------
def _pprefix(tp: str, broker: int) -> str:
    return f"[Partition {tp} broker={broker}] "


def isr_shrink(
    v: Version, tp: str, broker: int, old: Sequence[int], new: Sequence[int], hw: int, leo: int,
    out: Sequence[tuple[int, int, int]],
) -> Line:
    """``Shrinking ISR from A to B. Leader: (...). Out of sync replicas: (...).``; ``out`` = (id, leo, lastCaughtUpMs)."""
    if v.at_least("3.6"):
        groups = " ".join(f"(brokerId: {r}, endOffset: {e}, lastCaughtUpTimeMs: {t})" for r, e, t in out)
    else:
        groups = " ".join(f"(brokerId: {r}, endOffset: {e})" for r, e, _ in out)
    return (
        "INFO",
        _pprefix(tp, broker) + f"Shrinking ISR from {comma(old)} to {comma(new)}. Leader: (highWatermark: {hw}, "
        f"endOffset: {leo}). Out of sync replicas: {groups}.",
        PARTITION,
    )


def isr_updated(v: Version, tp: str, broker: int, isr: Sequence[int], version: int) -> Line:
    """Commit confirmation ``ISR updated to ... and version updated to ...`` (§2.1 table)."""
    if v.at_least("3.5"):
        msg = f"ISR updated to {comma(isr)}  and version updated to {version}"
    elif v.at_least("3.1"):
        msg = f"ISR updated to {comma(isr)} and version updated to {version}"
    elif v.at_least("2.8"):
        msg = f"ISR updated to {comma(isr)} and version updated to [{version}]"
    elif v.at_least("2.7"):
        msg = f"ISR updated from AlterIsr to {comma(isr)} and version updated to [{version}]"
    else:
        msg = f"ISR updated to [{comma(isr)}] and zkVersion updated to [{version}]"
    return "INFO", _pprefix(tp, broker) + msg, PARTITION


def isr_expanding(tp: str, broker: int, old: Sequence[int], new: Sequence[int]) -> Line:
    """2.6 (and 2.7 direct-ZK) ``Expanding ISR from A to B``."""
    return "INFO", _pprefix(tp, broker) + f"Expanding ISR from {comma(old)} to {comma(new)}", PARTITION


def committed_state(isr: Sequence[int]) -> str:
    """3.3+ ``CommittedPartitionState(isr=Set(..), leaderRecoveryState=RECOVERED)``."""
    return f"CommittedPartitionState(isr=Set({', '.join(str(i) for i in isr)}), leaderRecoveryState=RECOVERED)"


def alter_partition_ineligible(
    v: Version, tp: str, broker: int, new_replica: int, leader_epoch: int,
    isr_epochs: Sequence[tuple[int, int]], partition_epoch: int, committed_isr: Sequence[int],
) -> Line:
    """3.3+ INFO ``Failed to alter partition to PendingExpandIsr(...) ... INELIGIBLE_REPLICA ...``."""
    lai = api_leader_and_isr_epochs(v, broker, leader_epoch, isr_epochs, partition_epoch)
    committed = committed_state(committed_isr)
    pending = (
        f"PendingExpandIsr(newInSyncReplicaId={new_replica}, sentLeaderAndIsr={lai}, "
        f"leaderRecoveryState=RECOVERED, lastCommittedState={committed})"
    )
    return (
        "INFO",
        _pprefix(tp, broker) + f"Failed to alter partition to {pending} since the controller rejected the "
        f"request with INELIGIBLE_REPLICA. Partition state has been reset to the latest committed state "
        f"{committed}.",
        PARTITION,
    )


def api_leader_and_isr_epochs(
    v: Version, leader: int, leader_epoch: int, isr_epochs: Sequence[tuple[int, int]], partition_epoch: int
) -> str:
    """``LeaderAndIsr`` with real broker epochs (3.5+ ``isrWithBrokerEpoch``), else the plain form."""
    if v.at_least("3.5"):
        states = scala_list(f"BrokerState(brokerId={r}, brokerEpoch={e})" for r, e in isr_epochs)
        return (
            f"LeaderAndIsr(leader={leader}, leaderEpoch={leader_epoch}, isrWithBrokerEpoch={states}, "
            f"leaderRecoveryState=RECOVERED, partitionEpoch={partition_epoch})"
        )
    return api_leader_and_isr(v, leader, leader_epoch, [r for r, _ in isr_epochs], partition_epoch)


# -- follower fetcher / noise with stack traces (§6) -----------------------------------------
def fetcher_prefix(replica: int, leader: int, fetcher_id: int = 0) -> str:
    """``[ReplicaFetcher replicaId=R, leaderId=L, fetcherId=N] ``."""
    return f"[ReplicaFetcher replicaId={replica}, leaderId={leader}, fetcherId={fetcher_id}] "


def fetcher_older_epoch(replica: int, leader: int, tp: str, epoch: int) -> Line:
    """§6.2 FENCED_LEADER_EPOCH on the follower (benign)."""
    return (
        "INFO",
        fetcher_prefix(replica, leader) + f"Partition {tp} has an older epoch ({epoch}) than the current leader. "
        "Will await the new LeaderAndIsr state before resuming fetching.",
        FETCHER,
    )


def append_error(broker: int, tp: str) -> tuple[Line, list[str]]:
    """§6.1 ERROR ``Error processing append operation on partition <tp>`` plus a Java stack trace."""
    trace = [
        "java.lang.IllegalStateException: Unexpected batch size while validating records",
        "\tat kafka.log.LogValidator$.validateMessagesAndAssignOffsets(LogValidator.scala:112)",
        "\tat kafka.log.UnifiedLog.append(UnifiedLog.scala:802)",
        "\tat kafka.cluster.Partition.appendRecordsToLeader(Partition.scala:1276)",
        "\tat kafka.server.ReplicaManager.$anonfun$appendToLocalLog$6(ReplicaManager.scala:1227)",
        "\tat scala.collection.StrictOptimizedIterableOps.map(StrictOptimizedIterableOps.scala:100)",
        "\tat kafka.server.KafkaApis.handle(KafkaApis.scala:175)",
        "\tat kafka.server.KafkaRequestHandler.run(KafkaRequestHandler.scala:154)",
        "\tat java.base/java.lang.Thread.run(Thread.java:840)",
    ]
    return ("ERROR", f"[ReplicaManager broker={broker}] Error processing append operation on partition {tp}",
            REPLICA_MGR), trace


def fetch_disconnected(replica: int, leader: int) -> tuple[Line, list[str]]:
    """WARN on the follower when its leader goes away, with the IOException trace."""
    trace = [
        f"java.io.IOException: Connection to {leader} was disconnected before the response was read",
        "\tat org.apache.kafka.clients.NetworkClientUtils.sendAndReceive(NetworkClientUtils.java:99)",
        "\tat kafka.server.BrokerBlockingSender.sendRequest(BrokerBlockingSender.scala:113)",
        "\tat kafka.server.RemoteLeaderEndPoint.fetch(RemoteLeaderEndPoint.scala:79)",
        "\tat kafka.server.AbstractFetcherThread.processFetchRequest(AbstractFetcherThread.scala:316)",
        "\tat kafka.server.AbstractFetcherThread.doWork(AbstractFetcherThread.scala:130)",
        "\tat org.apache.kafka.server.util.ShutdownableThread.run(ShutdownableThread.java:130)",
    ]
    desc = (
        f"(type=FetchRequest, replicaId={replica}, maxWait=500, minBytes=1, maxBytes=10485760, fetchData={{}}, "
        "isolationLevel=READ_UNCOMMITTED, removed=, replaced=, metadata=(sessionId=INVALID, epoch=INITIAL), "
        "rackId=)"
    )
    return ("WARN", fetcher_prefix(replica, leader) + f"Error in response for fetch request {desc}", FETCHER), trace


def noise_lines(broker: int, tp: str, offset: int, group_gen: int) -> list[Line]:
    """Irrelevant INFO lines a busy broker writes (segment rolls, group coordinator)."""
    return [
        ("INFO", f"[LocalLog partition={tp}, dir=/var/lib/kafka/data] Rolled new log segment at offset "
                 f"{offset} in 2 ms.", "kafka.log.LocalLog"),
        ("INFO", f"[GroupCoordinator {broker}]: Stabilized group orders-consumers generation {group_gen} "
                 f"(__consumer_offsets-{group_gen % 50}) with 3 members", "kafka.coordinator.group.GroupCoordinator"),
    ]
