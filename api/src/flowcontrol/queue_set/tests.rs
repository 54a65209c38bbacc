//! The queue set's tests: fair dispatch, full queues, time-outs, rejection, clients that go away.
use super::*;
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(5);

/// Grant order of the flows admitted by [`spawn_admit`].
type Order = Arc<Mutex<Vec<&'static str>>>;

/// Admits in the background, records the grant in `order` and returns the seats at once.
fn spawn_admit(
    set: &Arc<QueueSet>,
    flow: &'static str,
    seats: u32,
    order: &Order,
) -> JoinHandle<Result<(), Rejection>> {
    let (set, order) = (set.clone(), order.clone());
    tokio::spawn(async move {
        let granted = set.admit(flow, seats, WAIT).await?;
        order.lock().unwrap().push(flow);
        drop(granted);
        Ok(())
    })
}

/// A queue set of `limit` seats and queues of `queue_length_limit`, and an empty order.
fn queue_set(limit: u32, queue_length_limit: usize) -> (Arc<QueueSet>, Order) {
    (
        QueueSet::new(limit, Some(queue_length_limit)),
        Order::default(),
    )
}

/// Admits at once or within [`WAIT`]; panics when refused.
async fn admitted(set: &Arc<QueueSet>, flow: &str, seats: u32) -> Seats {
    set.admit(flow, seats, WAIT).await.unwrap()
}

/// Waits for each of these admissions; panics unless every one was granted.
async fn all_granted(admissions: impl IntoIterator<Item = JoinHandle<Result<(), Rejection>>>) {
    for admission in admissions {
        admission.await.unwrap().unwrap();
    }
}

/// [`spawn_admit`], once the admission has had its chance to run (and queue).
async fn queued_admission(
    set: &Arc<QueueSet>,
    flow: &'static str,
    seats: u32,
    order: &Order,
) -> JoinHandle<Result<(), Rejection>> {
    let admission = spawn_admit(set, flow, seats, order);
    settle().await;
    admission
}

async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_request_is_admitted_at_once_while_seats_are_free_and_returns_them() {
    let set = QueueSet::new(2, Some(10));
    let a = admitted(&set, "alice", 1).await;
    let b = admitted(&set, "bob", 1).await;
    assert_eq!(set.load(), (0, 2));
    drop((a, b));
    assert_eq!(set.load(), (0, 0));
}

#[tokio::test]
async fn a_light_flow_goes_before_a_flooding_flows_queue() {
    let (set, order) = queue_set(2, 50);
    let held = [
        admitted(&set, "noisy", 1).await,
        admitted(&set, "noisy", 1).await,
    ];
    let noisy: Vec<_> = (0..5)
        .map(|_| spawn_admit(&set, "noisy", 1, &order))
        .collect();
    settle().await;
    let light = queued_admission(&set, "light", 1, &order).await;
    assert_eq!(set.load(), (6, 2));
    drop(held);
    all_granted([light]).await;
    all_granted(noisy).await;
    // The noisy flow had more service than the light one when the first seat freed.
    assert_eq!(order.lock().unwrap()[0], "light");
    assert_eq!(set.load(), (0, 0));
}

#[tokio::test]
async fn a_full_queue_refuses_and_other_flows_still_queue() {
    let (set, order) = queue_set(1, 2);
    let held = admitted(&set, "noisy", 1).await;
    let queued: Vec<_> = (0..2)
        .map(|_| spawn_admit(&set, "noisy", 1, &order))
        .collect();
    settle().await;
    let refused = set.admit("noisy", 1, WAIT).await.err();
    assert_eq!(refused, Some(Rejection::QueueFull));
    let light = queued_admission(&set, "light", 1, &order).await;
    drop(held);
    all_granted([light]).await;
    all_granted(queued).await;
    // The noisy flow had the seat all along: the light one goes next.
    assert_eq!(order.lock().unwrap()[0], "light");
}

#[tokio::test]
async fn a_request_that_waits_too_long_is_refused_and_leaves_its_queue() {
    let set = QueueSet::new(1, Some(10));
    let held = admitted(&set, "a", 1).await;
    let late = set.admit("b", 1, Duration::from_millis(50)).await.err();
    assert_eq!(late, Some(Rejection::TimedOut));
    assert_eq!(set.load(), (0, 1));
    drop(held);
    assert_eq!(set.load(), (0, 0));
}

#[tokio::test]
async fn a_rejecting_level_runs_what_fits_and_refuses_the_rest_without_queueing() {
    let set = QueueSet::new(2, None);
    let one = admitted(&set, "a", 1).await;
    let two = admitted(&set, "a", 1).await;
    let refused = set.admit("b", 1, Duration::from_secs(5)).await.err();
    assert_eq!(refused, Some(Rejection::ConcurrencyLimit));
    assert_eq!(set.load(), (0, 2), "nothing waits");
    drop(one);
    drop(admitted(&set, "b", 1).await);
    drop(two);
    assert_eq!(set.load(), (0, 0));
}

#[tokio::test]
async fn a_client_that_goes_away_while_queued_or_just_granted_leaks_no_seat() {
    let (set, order) = queue_set(1, 10);
    let held = admitted(&set, "a", 1).await;
    let gone = queued_admission(&set, "b", 1, &order).await;
    gone.abort();
    let _ = gone.await;
    assert_eq!(set.load(), (0, 1));
    // Granted, then dropped before it ran.
    let granted = queued_admission(&set, "c", 1, &order).await;
    drop(held);
    granted.abort();
    let _ = granted.await;
    assert!(order.lock().unwrap().is_empty());
    assert_eq!(set.load(), (0, 0));
    drop(admitted(&set, "d", 1).await);
}

#[tokio::test]
async fn a_wide_request_is_not_starved_by_narrow_ones() {
    let (set, order) = queue_set(4, 10);
    let held = admitted(&set, "a", 3).await;
    let wide = queued_admission(&set, "wide", 4, &order).await;
    let narrow = queued_admission(&set, "narrow", 1, &order).await;
    // One seat is free, but the wide request (queued first, at the same virtual time) is
    // next: the narrow one waits behind it.
    assert_eq!(set.load(), (2, 3));
    drop(held);
    all_granted([wide, narrow]).await;
    assert_eq!(order.lock().unwrap().as_slice(), ["wide", "narrow"]);
}
