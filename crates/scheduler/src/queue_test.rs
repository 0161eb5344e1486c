#![allow(clippy::unwrap_used)]

use super::*;
use crate::framework::plugins::testutil::{PodB, pod};

fn with_priority(p: PodB, prio: i32) -> PodB {
    let mut p = p;
    p.0.spec.get_or_insert_with(Default::default).priority = Some(prio);
    p
}

fn pi(name: &str, prio: i32) -> Arc<PodInfo> {
    Arc::new(with_priority(pod(name), prio).info())
}

fn with_uid(name: &str, uid: &str) -> Arc<PodInfo> {
    let mut p = pod(name);
    p.0.metadata.uid = Some(uid.into());
    Arc::new(p.info())
}

fn names(q: &mut PriorityQueue) -> Vec<String> {
    std::iter::from_fn(|| q.pop().map(|p| p.pod.name.clone())).collect()
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Pop a pod and fail it: the usual path into unschedulableQ.
fn fail(q: &mut PriorityQueue, now: Instant) -> (String, QueueName) {
    let p = q.pop().unwrap();
    let cycle = q.scheduling_cycle();
    let name = p.pod.name.clone();
    (
        name,
        q.add_unschedulable_if_not_present(p, cycle, now).unwrap(),
    )
}

/// `TestPriorityQueue_Add`: highest priority first, FIFO among equals.
#[test]
fn active_q_orders_by_priority_then_timestamp() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    q.add(pi("med", 10), t0);
    q.add(pi("unschedulable", 0), t0 + secs(1));
    q.add(pi("high", 100), t0 + secs(2));
    q.add(pi("med2", 10), t0 + secs(3));
    // Same timestamp and priority: insertion order.
    q.add(pi("low-a", -5), t0 + secs(4));
    q.add(pi("low-b", -5), t0 + secs(4));
    assert_eq!(q.pending_pods().active, 6);
    assert_eq!(
        names(&mut q),
        ["high", "med", "med2", "unschedulable", "low-a", "low-b"]
    );
    assert_eq!(q.scheduling_cycle(), 6);
}

#[test]
fn pop_counts_attempts_and_cycles() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    assert!(q.pop().is_none());
    q.add(pi("a", 0), t0);
    let p = q.pop().unwrap();
    assert_eq!((p.attempts, q.scheduling_cycle()), (1, 1));
    // Requeued after a move request: backoffQ; the attempts survive.
    q.move_all_to_active_or_backoff(ClusterEvent::NodeAdd, t0, None);
    assert_eq!(
        q.add_unschedulable_if_not_present(p, 1, t0 + secs(1)),
        Ok(QueueName::Backoff)
    );
    assert_eq!(q.flush_backoff(t0 + secs(1) + secs(2)), 1);
    let p = q.pop().unwrap();
    assert_eq!((p.attempts, q.scheduling_cycle()), (2, 2));
    assert_eq!(p.timestamp, t0 + secs(1));
    assert_eq!(p.initial_attempt_timestamp, t0);
}

/// `TestBackOffFlow`: 1, 2, 4, 8, 10, 10 s.
#[test]
fn backoff_doubles_from_1s_to_10s() {
    let q = PriorityQueue::default();
    let got: Vec<u64> = (1..=7).map(|a| q.backoff_duration(a).as_secs()).collect();
    assert_eq!(got, [1, 2, 4, 8, 10, 10, 10]);
    assert_eq!(q.backoff_duration(0), secs(1));
    assert_eq!(q.backoff_duration(u32::MAX), secs(10));

    // The flow: each failure after a move request backs off for the next duration.
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    q.add(pi("p", 0), t0);
    let mut now = t0;
    for (attempt, want) in [1u64, 2, 4, 8, 10, 10].into_iter().enumerate() {
        let p = q.pop().unwrap();
        assert_eq!(p.attempts as usize, attempt + 1);
        let cycle = q.scheduling_cycle();
        q.move_all_to_active_or_backoff(ClusterEvent::NodeUpdate, now, None);
        assert_eq!(
            q.add_unschedulable_if_not_present(p, cycle, now),
            Ok(QueueName::Backoff)
        );
        assert_eq!(q.next_backoff_expiry(), Some(now + secs(want)));
        // Not yet: one millisecond early.
        assert_eq!(
            q.flush_backoff(now + secs(want) - Duration::from_millis(1)),
            0
        );
        assert_eq!(q.pending_pods().backoff, 1);
        now += secs(want);
        assert_eq!(q.flush_backoff(now), 1);
        assert_eq!(q.pending_pods().active, 1);
    }
}

/// A reloaded configuration's backoffs (`set_backoff`): later durations use them, and pods
/// already in backoffQ are re-timed (a shorter backoff releases them sooner, a longer one
/// later), in their new expiry order.
#[test]
fn set_backoff_retimes_the_pods_backing_off() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    q.add(pi("once", 0), t0);
    q.add(pi("twice", 0), t0);
    // "once" fails once (1 s backoff), "twice" twice (2 s).
    let once = q.pop().unwrap();
    let mut twice = q.pop().unwrap();
    twice.attempts = 2;
    let cycle = q.scheduling_cycle();
    q.move_all_to_active_or_backoff(ClusterEvent::NodeAdd, t0, None);
    q.add_unschedulable_if_not_present(once, cycle, t0).unwrap();
    q.add_unschedulable_if_not_present(twice, cycle, t0)
        .unwrap();
    assert_eq!(q.pending_pods().backoff, 2);
    assert_eq!(q.next_backoff_expiry(), Some(t0 + secs(1)));
    // 5 s initial, 8 s max: "once" backs off 5 s, "twice" min(10, 8) = 8 s.
    q.set_backoff(secs(5), secs(8));
    assert_eq!(q.config().pod_initial_backoff, secs(5));
    assert_eq!(q.backoff_duration(3), secs(8));
    assert_eq!(q.next_backoff_expiry(), Some(t0 + secs(5)));
    assert_eq!(
        q.flush_backoff(t0 + secs(4)),
        0,
        "the old 1 s and 2 s are gone"
    );
    assert_eq!(q.flush_backoff(t0 + secs(5)), 1);
    assert_eq!(q.next_backoff_expiry(), Some(t0 + secs(8)));
    assert_eq!(names(&mut q), ["once"]);
    // Shorter again: "twice" is released at once.
    q.set_backoff(Duration::from_millis(100), secs(1));
    assert_eq!(q.flush_backoff(t0 + secs(5)), 1);
    assert_eq!(names(&mut q), ["twice"]);
}

/// `TestPriorityQueue_AddUnschedulableIfNotPresent` and
/// `TestPriorityQueue_MoveAllToActiveOrBackoffQueue`: a failed pod waits in
/// unschedulableQ until a node is added; the event sends it to backoffQ while it is still
/// backing off, and straight to activeQ afterwards.
#[test]
fn unschedulable_pods_move_on_node_add() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    q.add(pi("a", 0), t0);
    q.add(pi("b", 0), t0);
    assert_eq!(fail(&mut q, t0).1, QueueName::Unschedulable);
    assert_eq!(fail(&mut q, t0).1, QueueName::Unschedulable);
    assert_eq!(
        q.pending_pods(),
        PendingPods {
            active: 0,
            backoff: 0,
            unschedulable: 2
        }
    );
    // Time alone does nothing before the interval.
    assert_eq!(q.flush_backoff(t0 + secs(30)), 0);
    assert_eq!(q.flush_unschedulable(t0 + secs(30)), 0);

    // Within the 1 s backoff: backoffQ.
    assert_eq!(
        q.move_all_to_active_or_backoff(
            ClusterEvent::NodeAdd,
            t0 + Duration::from_millis(500),
            None
        ),
        2
    );
    assert_eq!(q.pending_pods().backoff, 2);
    assert_eq!(q.flush_backoff(t0 + secs(1)), 2);
    assert_eq!(names(&mut q), ["a", "b"]);

    // After the backoff: activeQ directly; the pre-check filters.
    let t1 = t0 + secs(10);
    q.add(pi("c", 0), t1);
    q.add(pi("d", 0), t1);
    fail(&mut q, t1);
    fail(&mut q, t1);
    let only_c = |p: &PodInfo| p.name == "c";
    assert_eq!(
        q.move_all_to_active_or_backoff(ClusterEvent::NodeAdd, t1 + secs(5), Some(&only_c)),
        1
    );
    assert_eq!(q.queue_of("default/c"), Some(QueueName::Active));
    assert_eq!(q.queue_of("default/d"), Some(QueueName::Unschedulable));
}

/// `TestFlushUnschedulableQLeftover`, with the interval of this scheduler (5 min; strictly
/// longer than the interval) and with v1.22's 60 s.
#[test]
fn unschedulable_pods_flushed_after_interval() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    q.add(pi("a", 0), t0);
    fail(&mut q, t0);
    q.add(pi("b", 0), t0 + secs(60));
    fail(&mut q, t0 + secs(60));
    assert_eq!(q.flush_unschedulable(t0 + secs(300)), 0);
    assert_eq!(q.flush_unschedulable(t0 + secs(301)), 1);
    assert_eq!(q.queue_of("default/a"), Some(QueueName::Active));
    assert_eq!(q.queue_of("default/b"), Some(QueueName::Unschedulable));
    assert_eq!(q.flush_unschedulable(t0 + secs(361)), 1);
    assert_eq!(q.pending_pods().active, 2);

    let mut q = PriorityQueue::new(QueueConfig {
        unschedulable_q_time_interval: V1_22_UNSCHEDULABLE_Q_TIME_INTERVAL,
        ..QueueConfig::default()
    });
    q.add(pi("a", 0), t0);
    fail(&mut q, t0);
    assert_eq!(q.flush_unschedulable(t0 + secs(60)), 0);
    assert_eq!(q.flush_unschedulable(t0 + secs(61)), 1);
}

/// `TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff` / the moveRequestCycle race:
/// a move request that arrives while a pod is being scheduled sends it to backoffQ when it
/// fails; a request before its cycle began does not.
#[test]
fn move_request_during_scheduling_sends_failed_pod_to_backoff() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    // Move request before anything was popped: cycle 0.
    q.move_all_to_active_or_backoff(ClusterEvent::NodeAdd, t0, None);
    q.add(pi("a", 0), t0);
    q.add(pi("b", 0), t0);
    let a = q.pop().unwrap();
    let a_cycle = q.scheduling_cycle();
    // The event arrived before a's cycle began: a goes to unschedulableQ.
    assert_eq!(
        q.add_unschedulable_if_not_present(a, a_cycle, t0),
        Ok(QueueName::Unschedulable)
    );
    let b = q.pop().unwrap();
    let b_cycle = q.scheduling_cycle();
    // A node is added while b is being scheduled (it also moves a).
    assert_eq!(
        q.move_all_to_active_or_backoff(ClusterEvent::NodeAdd, t0, None),
        1
    );
    assert_eq!(
        q.add_unschedulable_if_not_present(b, b_cycle, t0),
        Ok(QueueName::Backoff)
    );
    assert_eq!(q.pending_pods().backoff, 2);
    // A later cycle without a new request: unschedulableQ again.
    q.flush_backoff(t0 + secs(1));
    let a = q.pop().unwrap();
    let c = q.scheduling_cycle();
    assert_eq!(
        q.add_unschedulable_if_not_present(a, c, t0 + secs(1)),
        Ok(QueueName::Unschedulable)
    );
}

#[test]
fn add_unschedulable_if_present_is_refused() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    q.add(pi("a", 0), t0);
    let p = q.pop().unwrap();
    // The pod was updated while being scheduled: Update put it back in activeQ.
    q.update(None, pi("a", 0), t0);
    assert_eq!(
        q.add_unschedulable_if_not_present(p, 1, t0),
        Err(QueueError::AddUnschedulable {
            pod: "default/a".into(),
            queue: QueueName::Active
        })
    );
    assert_eq!(q.pending_pods().total(), 1);
}

/// `TestPriorityQueue_Update`.
#[test]
fn update_of_queued_pods() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    // Not queued: added to activeQ.
    assert_eq!(q.update(None, pi("a", 0), t0), QueueName::Active);
    // In activeQ: replaced in place, timestamp kept.
    let a2 = Arc::new(with_priority(pod("a"), 0).label("x", "y").info());
    assert_eq!(q.update(None, a2, t0 + secs(5)), QueueName::Active);
    let a = q.get("default/a").unwrap();
    assert_eq!(
        (a.timestamp, a.pod.labels.get("x").cloned()),
        (t0, Some("y".into()))
    );
    assert_eq!(q.pending_pods().active, 1);

    // In unschedulableQ, status-only change: stays.
    let old = q.pop().unwrap().pod;
    q.add_unschedulable_if_not_present(q_info(&old, 1), 1, t0)
        .unwrap();
    let mut status_only = old.object().unwrap().clone();
    status_only.status = Some(Default::default());
    status_only.metadata.resource_version = Some("7".into());
    let status_only = Arc::new(PodInfo::from_pod(status_only).unwrap());
    assert_eq!(
        q.update(Some(&old), status_only.clone(), t0 + secs(5)),
        QueueName::Unschedulable
    );
    // A real change within the backoff: backoffQ; after it: activeQ.
    let changed = Arc::new(with_priority(pod("a"), 0).label("x", "z").info());
    assert_eq!(
        q.update(
            Some(&status_only),
            changed.clone(),
            t0 + Duration::from_millis(100)
        ),
        QueueName::Backoff
    );
    q.flush_backoff(t0 + secs(1));
    let p = q.pop().unwrap();
    let c = q.scheduling_cycle();
    q.add_unschedulable_if_not_present(p, c, t0 + secs(1))
        .unwrap();
    let changed2 = Arc::new(with_priority(pod("a"), 0).label("x", "w").info());
    assert_eq!(
        q.update(Some(&changed), changed2, t0 + secs(10)),
        QueueName::Active
    );
    assert_eq!(q.get("default/a").unwrap().attempts, 2);
}

fn q_info(p: &Arc<PodInfo>, attempts: u32) -> QueuedPodInfo {
    let t = Instant::now();
    QueuedPodInfo {
        attempts,
        ..QueuedPodInfo::new(p.clone(), t)
    }
}

/// `TestPriorityQueue_Delete`, plus UIDs: deleting an older incarnation keeps the newer.
#[test]
fn delete_from_every_queue() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    q.add(pi("u", 0), t0);
    assert_eq!(fail(&mut q, t0).1, QueueName::Unschedulable);
    q.add(pi("b", 0), t0);
    let b = q.pop().unwrap();
    // A move request that moves nothing still counts for moveRequestCycle.
    let nothing = |_: &PodInfo| false;
    q.move_all_to_active_or_backoff(ClusterEvent::AssignedPodDelete, t0, Some(&nothing));
    assert_eq!(
        q.add_unschedulable_if_not_present(b, 2, t0),
        Ok(QueueName::Backoff)
    );
    q.add(pi("a", 0), t0);
    assert_eq!(
        q.pending_pods(),
        PendingPods {
            active: 1,
            backoff: 1,
            unschedulable: 1
        }
    );
    assert_eq!(q.delete(&pi("b", 0)), Some(QueueName::Backoff));
    assert_eq!(q.delete(&pi("a", 0)), Some(QueueName::Active));
    assert_eq!(q.delete(&pi("a", 0)), None);
    assert_eq!(q.delete(&pi("u", 0)), Some(QueueName::Unschedulable));
    assert!(q.is_empty());

    q.add(with_uid("r", "uid-2"), t0);
    assert_eq!(q.delete(&with_uid("r", "uid-1")), None);
    assert_eq!(q.pending_pods().active, 1);
    // An update under another UID is a new pod: fresh timestamp, zero attempts.
    let p = q.pop().unwrap();
    let c = q.scheduling_cycle();
    assert_eq!(
        q.add_unschedulable_if_not_present(p, c, t0),
        Ok(QueueName::Unschedulable)
    );
    assert_eq!(
        q.update(None, with_uid("r", "uid-3"), t0 + secs(1)),
        QueueName::Active
    );
    let r = q.get("default/r").unwrap();
    assert_eq!((r.attempts, r.timestamp), (0, t0 + secs(1)));
    assert_eq!(q.pending_pods().total(), 1);
    assert_eq!(q.delete(&with_uid("r", "uid-3")), Some(QueueName::Active));
    // A pod without a UID matches any incarnation.
    q.add(with_uid("s", "uid-1"), t0);
    assert_eq!(q.delete(&pi("s", 0)), Some(QueueName::Active));
}

/// `Add` of a queued pod replaces it in activeQ (fresh timestamp, zero attempts).
#[test]
fn add_replaces_a_queued_copy() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    q.add(pi("a", 0), t0);
    fail(&mut q, t0);
    q.add(pi("a", 0), t0 + secs(2));
    assert_eq!(
        q.pending_pods(),
        PendingPods {
            active: 1,
            backoff: 0,
            unschedulable: 0
        }
    );
    assert_eq!(q.get("default/a").unwrap().attempts, 0);
}

#[test]
fn activate_moves_to_active() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    q.add(pi("a", 0), t0);
    q.add(pi("b", 0), t0);
    fail(&mut q, t0);
    let b = q.pop().unwrap();
    q.move_all_to_active_or_backoff(ClusterEvent::NodeAdd, t0, None);
    q.add_unschedulable_if_not_present(b, 2, t0).unwrap();
    assert_eq!(q.pending_pods().backoff, 2);
    assert_eq!(q.activate(["default/a", "default/b", "default/zz"]), 2);
    assert_eq!(q.pending_pods().active, 2);
}

#[test]
fn pending_pods_and_labels() {
    let t0 = Instant::now();
    let mut q = PriorityQueue::default();
    for n in ["a", "b", "c", "d"] {
        q.add(pi(n, 0), t0);
    }
    fail(&mut q, t0); // a -> unschedulable
    let b = q.pop().unwrap();
    q.move_all_to_active_or_backoff(ClusterEvent::NodeUpdate, t0, None); // a -> backoff
    q.add_unschedulable_if_not_present(b, 2, t0).unwrap(); // b -> backoff
    let c = q.pop().unwrap();
    q.add_unschedulable_if_not_present(c, 3, t0).unwrap(); // c -> unschedulable
    assert_eq!(
        q.pending_pods(),
        PendingPods {
            active: 1,
            backoff: 2,
            unschedulable: 1
        }
    );
    assert_eq!(q.pending_pods().total(), 4);
    assert_eq!(
        [
            QueueName::Active,
            QueueName::Backoff,
            QueueName::Unschedulable
        ]
        .map(|n| n.as_str()),
        ["active", "backoff", "unschedulable"]
    );
}
