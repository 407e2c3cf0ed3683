//! When an idle module is suspended: a configured idle period, stretched for modules that are
//! woken right after being suspended (hysteresis); and, for a module whose live ops all stand
//! waiting, between its timers: timers are foreseen, so only unforeseen wake-ups (watch
//! events, the stop signal, stream messages) count against its idleness, and it is resumed
//! just ahead of its earliest timer. Pure and clock-free: callers pass the instants and
//! durations they measured.

use std::time::Duration;

use tokio::time::Instant;

use crate::runtime::ops::Waits;

/// A module's suspend setting (`suspend: {idleAfter: 30s, betweenTimers: true}` in a
/// manifest): suspend it once it has been idle for `idle_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuspendPolicy {
    /// How long a module must be idle (not entered, no completion waiting) before it is
    /// suspended; the starting and smallest idle threshold.
    pub idle_after: Duration,
    /// Whether timers are foreseen (the default): a module whose ops all stand waiting is
    /// idle from its last unforeseen wake-up, suspended between its timers and resumed ahead
    /// of them. `false`: every delivery, a timer's too, makes it busy, and a timer's delivery
    /// resumes it.
    pub between_timers: bool,
    /// Between timers, the module is suspended only if its next timer is at least this many
    /// times the host's average suspend-and-resume time away (see
    /// [`SuspendCost`](super::SuspendCost)); 0: timers alone decide. Default
    /// [`DEFAULT_COST_FACTOR`](Self::DEFAULT_COST_FACTOR).
    pub cost_factor: u32,
}

impl SuspendPolicy {
    /// The largest idle threshold, as a multiple of `idle_after`.
    pub const MAX_FACTOR: u32 = 16;

    /// The longest a module must stay suspended before its next timer for a suspend to be
    /// worth it (a shorter idle threshold is used instead), unless the host's suspends and
    /// resumes make [`cost_factor`](Self::cost_factor) ask for more: a snapshot and a resume
    /// of a few MiB cost a few ms (the book's benchmark report, "Resume from disk").
    pub const TIMER_GAP: Duration = Duration::from_millis(500);

    /// The default [`cost_factor`](Self::cost_factor): suspending a module between its timers
    /// costs at most 1/250 of the time it stays suspended, 0.4 % of a core.
    pub const DEFAULT_COST_FACTOR: u32 = 250;

    /// Under memory pressure, how long after its last entry a module still waiting for the
    /// answer to one of its requests is suspended anyway (the answer resumes it), or longer
    /// if a suspend and a resume cost more than its [`cost_factor`](Self::cost_factor)
    /// allows. An answer is normally the module's next entry within milliseconds; one this
    /// late means a slow API server, or a host short of memory that reads its connections
    /// late, and an instance kept for it holds the memory the host is short of.
    pub const SLOW_ANSWER: Duration = Duration::from_millis(500);

    /// A policy suspending after `idle_after`, between timers too when that pays.
    pub fn after(idle_after: Duration) -> Self {
        Self {
            idle_after,
            between_timers: true,
            cost_factor: Self::DEFAULT_COST_FACTOR,
        }
    }

    /// This policy with another [`cost_factor`](Self::cost_factor).
    pub fn cost_factor(self, cost_factor: u32) -> Self {
        Self {
            cost_factor,
            ..self
        }
    }

    /// This policy, suspending between timers or not.
    pub fn between_timers(self, between_timers: bool) -> Self {
        Self {
            between_timers,
            ..self
        }
    }
}

/// The idle threshold of one running module, adapted to how it behaves:
/// - resumed sooner than `idle_after` after it was suspended: suspending it was a waste, so
///   the threshold doubles (up to [`SuspendPolicy::MAX_FACTOR`] × `idle_after`);
/// - stayed suspended longer than its threshold: it really is idle, so the threshold halves
///   back towards `idle_after`;
/// - a snapshot that could not be written doubles it too, and the next attempt waits that
///   long, so a failing disk is not retried after every idle period (nor at once, for a
///   module idle far longer than its threshold).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleThreshold {
    policy: SuspendPolicy,
    current: Duration,
    /// After a snapshot that could not be written: no new attempt before this.
    not_before: Option<Instant>,
    /// Under memory pressure (see [`at_once`](Self::at_once)).
    pressed: bool,
}

impl IdleThreshold {
    /// A threshold starting at `policy.idle_after`.
    pub fn new(policy: SuspendPolicy) -> Self {
        Self {
            policy,
            current: policy.idle_after,
            not_before: None,
            pressed: false,
        }
    }

    /// How long the module must be idle now before it is suspended.
    pub fn current(&self) -> Duration {
        self.current
    }

    /// This threshold with no idle period left, as under memory pressure (see
    /// [`pressure`](super::pressure)): the module is suspended as soon as it is idle, and
    /// between timers whenever its next timer is far enough for a suspend and a resume to
    /// pay; one waiting for an answer, once the answer is
    /// [late](SuspendPolicy::SLOW_ANSWER). Never sooner than a failed snapshot's retry
    /// allows.
    pub fn at_once(self) -> Self {
        Self {
            current: Duration::ZERO,
            pressed: true,
            ..self
        }
    }

    /// The largest threshold.
    pub fn max(&self) -> Duration {
        self.policy
            .idle_after
            .saturating_mul(SuspendPolicy::MAX_FACTOR)
    }

    /// When a resident module is suspended if nothing wakes it first, or `None` while an
    /// answer to one of its requests is due or its earliest timer is too near (the question
    /// is asked again after each delivery):
    /// - never while an answer is due (`!waits.only_standing`: an HTTP request or a stream
    ///   send, answered within the request timeout): the answer is the module's next entry,
    ///   and a slow API server must not turn each request into a suspend and a resume;
    ///   except [under memory pressure](Self::at_once), where it is suspended
    ///   [`SLOW_ANSWER`](SuspendPolicy::SLOW_ANSWER) after its last entry (at least
    ///   `round_trip` times its cost factor), its timers weighed as below;
    /// - its threshold after its last unforeseen wake-up `last_unforeseen` (start, watch
    ///   event, stop signal, stream message): deliveries of its timers, and of answers to its
    ///   own requests, do not make a module busy;
    /// - never earlier than `now` (nor, after a snapshot that could not be written, than the
    ///   threshold after that), and only if its earliest timer falls due at least the
    ///   [timer gap](Self::timer_gap) after that: a module is not suspended just before a
    ///   timer wakes it, nor when a suspend and a resume, which take `round_trip` on this
    ///   host now (see [`SuspendCost`](super::SuspendCost)), would cost more than the
    ///   policy's [`cost_factor`](SuspendPolicy::cost_factor) allows.
    ///
    /// Without [`between_timers`](SuspendPolicy::between_timers): its threshold after its
    /// last entry, whatever else it waits for (but never while an answer is due).
    pub fn suspend_at(
        &self,
        now: Instant,
        last_entry: Instant,
        last_unforeseen: Instant,
        waits: Waits,
        round_trip: Duration,
    ) -> Option<Instant> {
        let now = self
            .not_before
            .map_or(now, |not_before| not_before.max(now));
        if !waits.only_standing && !self.pressed {
            return None;
        }
        let (idle_since, idle_for) = match (waits.only_standing, self.policy.between_timers) {
            (false, _) => (
                last_entry,
                self.timer_gap(round_trip).max(SuspendPolicy::SLOW_ANSWER),
            ),
            (true, false) => (last_entry, self.current),
            (true, true) => (last_unforeseen, self.current),
        };
        let at = idle_since.checked_add(idle_for)?.max(now);
        if !self.policy.between_timers {
            return Some(at);
        }
        match waits.next_timer {
            Some(due) if due < at.checked_add(self.timer_gap(round_trip))? => None,
            _ => Some(at),
        }
    }

    /// Whether timers are foreseen (see [`SuspendPolicy::between_timers`]).
    pub fn between_timers(&self) -> bool {
        self.policy.between_timers
    }

    /// How long before its next timer a module may still be suspended: the current threshold,
    /// at most [`SuspendPolicy::TIMER_GAP`]; at least `round_trip` (what a suspend and a
    /// resume take on this host now) times the policy's
    /// [`cost_factor`](SuspendPolicy::cost_factor).
    pub fn timer_gap(&self, round_trip: Duration) -> Duration {
        let paying = round_trip.saturating_mul(self.policy.cost_factor);
        self.current.min(SuspendPolicy::TIMER_GAP).max(paying)
    }

    /// Records a resume after the module was suspended for `suspended_for`.
    pub fn resumed_after(&mut self, suspended_for: Duration) {
        if suspended_for < self.policy.idle_after {
            self.grow();
        } else if suspended_for > self.current {
            self.current = (self.current / 2).max(self.policy.idle_after);
        }
    }

    /// Records a snapshot that could not be written at `now` (the module stayed resident):
    /// the threshold grows, and the next attempt waits that long.
    pub fn suspend_failed(&mut self, now: Instant) {
        self.grow();
        self.not_before = now.checked_add(self.current);
    }

    fn grow(&mut self) {
        self.current = self.current.saturating_mul(2).min(self.max());
    }
}

/// How far ahead of its earliest timer a suspended module is resumed, so that the timer's
/// delivery does not wait for the resume: twice the module's last resume time plus
/// [`FLOOR`](Self::FLOOR) (the timer wheel's millisecond, the module task's wake-up), at most
/// [`CAP`](Self::CAP) and half the module's timer gap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResumeAhead {
    last_resume: Duration,
}

impl ResumeAhead {
    /// Added to twice the last resume time.
    pub const FLOOR: Duration = Duration::from_millis(5);
    /// The largest margin: half the smallest [timer gap](SuspendPolicy::TIMER_GAP).
    pub const CAP: Duration = Duration::from_millis(250);

    /// Records how long the module's last resume took.
    pub fn resumed_in(&mut self, took: Duration) {
        self.last_resume = took;
    }

    /// The margin now.
    pub fn margin(&self) -> Duration {
        self.last_resume
            .saturating_mul(2)
            .saturating_add(Self::FLOOR)
            .min(Self::CAP)
    }

    /// When a suspended module whose earliest timer falls due at `due` is resumed: the
    /// margin before it, at most half the module's `timer_gap` (it was suspended at least
    /// that long before `due`).
    pub fn resume_at(&self, due: Instant, timer_gap: Duration) -> Instant {
        let margin = self.margin().min(timer_gap / 2);
        due.checked_sub(margin).unwrap_or(due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);
    const MICRO: Duration = Duration::from_micros(1);

    fn waits(only_standing: bool, next_timer: Option<Instant>) -> Waits {
        Waits {
            only_standing,
            next_timer,
        }
    }

    #[test]
    fn a_module_waiting_on_watches_is_suspended_its_threshold_after_its_last_entry() {
        let t = IdleThreshold::new(SuspendPolicy::after(3 * S));
        let t0 = Instant::now();
        let at = t.suspend_at(t0 + S, t0, t0, waits(true, None), Duration::ZERO);
        assert_eq!(at, Some(t0 + 3 * S));
    }

    #[test]
    fn at_once_suspends_an_idle_module_now_and_one_awaiting_an_answer_once_it_is_late() {
        let mut t = IdleThreshold::new(SuspendPolicy::after(3 * S));
        let t0 = Instant::now();
        let now = t0 + 10 * MS;
        let idle = waits(true, None);
        assert_eq!(
            t.suspend_at(now, t0, t0, idle, Duration::ZERO),
            Some(t0 + 3 * S)
        );
        let pressed = t.at_once();
        assert_eq!(
            pressed.suspend_at(now, t0, t0, idle, Duration::ZERO),
            Some(now)
        );
        let answer_due = waits(false, None);
        assert_eq!(t.suspend_at(now, t0, t0, answer_due, Duration::ZERO), None);
        assert_eq!(
            pressed.suspend_at(now, t0, t0, answer_due, Duration::ZERO),
            Some(t0 + SuspendPolicy::SLOW_ANSWER),
            "an answer due is waited for until it is late"
        );
        assert_eq!(
            pressed.suspend_at(now, t0, t0, answer_due, 10 * MS),
            Some(t0 + 2500 * MS),
            "longer when a suspend and a resume cost more than the cost factor allows"
        );
        assert_eq!(
            pressed.suspend_at(now, t0, t0, waits(false, Some(t0 + 700 * MS)), MS),
            None,
            "nor just before a timer (a 1 ms suspend and resume: 250 ms at the default factor)"
        );
        // A timer 100 ms away: too near for the idle threshold's gap (500 ms), far enough
        // for a suspend and a resume of 0.2 ms together at the default cost factor (50 ms).
        let timer = waits(true, Some(now + 100 * MS));
        assert_eq!(t.suspend_at(now, t0, t0, timer, 200 * MICRO), None);
        assert_eq!(
            pressed.suspend_at(now, t0, t0, timer, 200 * MICRO),
            Some(now)
        );
        t.suspend_failed(t0);
        assert_eq!(
            t.at_once().suspend_at(now, t0, t0, idle, Duration::ZERO),
            Some(t0 + 6 * S),
            "a failed snapshot's retry waits"
        );
    }

    #[test]
    fn a_module_whose_answer_is_due_is_not_suspended() {
        let t0 = Instant::now();
        for policy in [
            SuspendPolicy::after(3 * S),
            SuspendPolicy::after(3 * S).between_timers(false),
        ] {
            let t = IdleThreshold::new(policy);
            // Entered last at t0 and waiting for an answer ever since: it stays resident.
            assert_eq!(
                t.suspend_at(t0 + 60 * S, t0, t0, waits(false, None), Duration::ZERO),
                None
            );
            // Once the answer was delivered and only standing ops are left, it is idle.
            assert!(
                t.suspend_at(
                    t0 + 60 * S,
                    t0 + 60 * S,
                    t0,
                    waits(true, None),
                    Duration::ZERO
                )
                .is_some()
            );
        }
    }

    #[test]
    fn timers_and_answers_do_not_make_a_standing_module_busy() {
        let t = IdleThreshold::new(SuspendPolicy::after(3 * S));
        let t0 = Instant::now();
        // Last watch event at t0; a requeue delivered at t0 + 10 s set the next one 20 s on.
        let now = t0 + 10 * S;
        let at = t.suspend_at(
            now,
            now,
            t0,
            waits(true, Some(now + 20 * S)),
            Duration::ZERO,
        );
        assert_eq!(
            at,
            Some(now),
            "suspended at once, until just before the requeue"
        );
    }

    #[test]
    fn no_suspend_just_before_a_timer() {
        let t = IdleThreshold::new(SuspendPolicy::after(3 * S));
        let t0 = Instant::now();
        // A one-second ticker, quiet otherwise: the gap is 500 ms, not the 3 s threshold.
        let now = t0 + 10 * S;
        let tick =
            |after| t.suspend_at(now, now, t0, waits(true, Some(now + after)), Duration::ZERO);
        assert_eq!(tick(999 * MS), Some(now));
        assert_eq!(tick(500 * MS), Some(now));
        assert_eq!(tick(499 * MS), None);
        // Within the threshold of an event: its timer must be due a gap after the threshold.
        let at = t.suspend_at(
            t0 + S,
            t0 + S,
            t0,
            waits(true, Some(t0 + 3 * S + 400 * MS)),
            Duration::ZERO,
        );
        assert_eq!(at, None);
        let at = t.suspend_at(
            t0 + S,
            t0 + S,
            t0,
            waits(true, Some(t0 + 4 * S)),
            Duration::ZERO,
        );
        assert_eq!(at, Some(t0 + 3 * S));
        // An answer is due and a timer is near: neither suspends it now.
        let at = t.suspend_at(
            t0 + 9 * S,
            t0,
            t0,
            waits(false, Some(t0 + 9 * S + 100 * MS)),
            Duration::ZERO,
        );
        assert_eq!(at, None);
    }

    #[test]
    fn a_ticker_is_not_suspended_when_a_suspend_and_a_resume_cost_more_than_its_gap() {
        let t = IdleThreshold::new(SuspendPolicy::after(3 * S).cost_factor(250));
        let t0 = Instant::now();
        let now = t0 + 10 * S;
        // A one-second ticker: suspended between its ticks while a round trip is cheap…
        let tick = |round_trip| t.suspend_at(now, now, t0, waits(true, Some(now + S)), round_trip);
        assert_eq!(tick(Duration::ZERO), Some(now));
        assert_eq!(tick(4 * MS), Some(now));
        // …but not once 250 of the host's suspends and resumes take longer than its period.
        assert_eq!(tick(5 * MS), None);
        assert_eq!(t.timer_gap(8 * MS), 2 * S);
        // Factor 0: timers alone decide.
        let t = IdleThreshold::new(SuspendPolicy::after(3 * S).cost_factor(0));
        assert_eq!(
            t.suspend_at(now, now, t0, waits(true, Some(now + S)), S),
            Some(now)
        );
    }

    #[test]
    fn without_between_timers_every_entry_counts_and_timers_do_not_hold_it_back() {
        let t = IdleThreshold::new(SuspendPolicy::after(3 * S).between_timers(false));
        assert!(!t.between_timers());
        let t0 = Instant::now();
        let now = t0 + 10 * S;
        let at = t.suspend_at(
            now,
            now,
            t0,
            waits(true, Some(now + 20 * S)),
            Duration::ZERO,
        );
        assert_eq!(at, Some(now + 3 * S));
        let at = t.suspend_at(
            now,
            now,
            t0,
            waits(true, Some(now + 3 * S + MS)),
            Duration::ZERO,
        );
        assert_eq!(
            at,
            Some(now + 3 * S),
            "suspended even just before its timer"
        );
    }

    #[test]
    fn the_timer_gap_is_the_threshold_when_smaller() {
        let t = IdleThreshold::new(SuspendPolicy::after(50 * MS));
        assert_eq!(t.timer_gap(Duration::ZERO), 50 * MS);
        let t0 = Instant::now();
        let at = t.suspend_at(t0, t0, t0, waits(true, Some(t0 + 300 * MS)), Duration::ZERO);
        assert_eq!(at, Some(t0 + 50 * MS));
        assert_eq!(
            IdleThreshold::new(SuspendPolicy::after(30 * S)).timer_gap(Duration::ZERO),
            SuspendPolicy::TIMER_GAP
        );
    }

    #[test]
    fn the_resume_ahead_margin_follows_the_last_resume_within_bounds() {
        let mut ahead = ResumeAhead::default();
        assert_eq!(ahead.margin(), ResumeAhead::FLOOR);
        ahead.resumed_in(3 * MS);
        assert_eq!(ahead.margin(), 11 * MS);
        let due = Instant::now() + S;
        assert_eq!(
            ahead.resume_at(due, SuspendPolicy::TIMER_GAP),
            due - 11 * MS
        );
        assert_eq!(
            ahead.resume_at(due, 10 * MS),
            due - 5 * MS,
            "half the gap at most"
        );
        ahead.resumed_in(S);
        assert_eq!(ahead.margin(), ResumeAhead::CAP);
        assert!(ResumeAhead::CAP * 2 <= SuspendPolicy::TIMER_GAP);
    }

    #[test]
    fn starts_at_idle_after() {
        let t = IdleThreshold::new(SuspendPolicy::after(30 * S));
        assert_eq!(t.current(), 30 * S);
        assert_eq!(t.max(), 480 * S);
    }

    #[test]
    fn early_wakes_double_it_up_to_the_cap() {
        let mut t = IdleThreshold::new(SuspendPolicy::after(10 * S));
        let mut seen = Vec::new();
        for _ in 0..6 {
            t.resumed_after(2 * S);
            seen.push(t.current().as_secs());
        }
        assert_eq!(seen, [20, 40, 80, 160, 160, 160]);
    }

    #[test]
    fn long_sleeps_halve_it_back_to_idle_after() {
        let mut t = IdleThreshold::new(SuspendPolicy::after(10 * S));
        for _ in 0..4 {
            t.resumed_after(S);
        }
        assert_eq!(t.current(), 160 * S);
        // Suspended longer than idle_after but not longer than the threshold: no change.
        t.resumed_after(100 * S);
        assert_eq!(t.current(), 160 * S);
        let mut seen = Vec::new();
        for _ in 0..6 {
            t.resumed_after(200 * S);
            seen.push(t.current().as_secs());
        }
        assert_eq!(seen, [80, 40, 20, 10, 10, 10]);
    }

    #[test]
    fn a_module_woken_at_its_pace_keeps_its_threshold() {
        // Idle 1 s, then woken every 5 s by a requeue: suspended for 4 s each time.
        let mut t = IdleThreshold::new(SuspendPolicy::after(S));
        for _ in 0..10 {
            t.resumed_after(4 * S);
        }
        assert_eq!(t.current(), S);
    }

    #[test]
    fn failed_snapshots_back_off() {
        let mut t = IdleThreshold::new(SuspendPolicy::after(S));
        let t0 = Instant::now();
        t.suspend_failed(t0);
        t.suspend_failed(t0);
        assert_eq!(t.current(), 4 * S);
        for _ in 0..10 {
            t.suspend_failed(t0);
        }
        assert_eq!(t.current(), 16 * S);
    }

    #[test]
    fn after_a_failed_snapshot_the_next_attempt_waits_the_threshold() {
        // Idle for an hour since its last event, ticking: without the wait, every loop turn
        // would try (and fail) again at once.
        for between_timers in [true, false] {
            let mut t = IdleThreshold::new(SuspendPolicy::after(S).between_timers(between_timers));
            let t0 = Instant::now();
            let now = t0 + 3600 * S;
            assert_eq!(
                t.suspend_at(now, t0, t0, waits(true, None), Duration::ZERO),
                Some(now)
            );
            t.suspend_failed(now);
            assert_eq!(
                t.suspend_at(now, t0, t0, waits(true, None), Duration::ZERO),
                Some(now + 2 * S),
                "between timers: {between_timers}"
            );
            let later = now + 5 * S;
            assert_eq!(
                t.suspend_at(later, t0, t0, waits(true, None), Duration::ZERO),
                Some(later)
            );
        }
    }

    #[test]
    fn exactly_idle_after_is_not_early() {
        let mut t = IdleThreshold::new(SuspendPolicy::after(S));
        t.resumed_after(S);
        assert_eq!(t.current(), S);
    }
}
