//! Which replica a module belongs to: rendezvous (highest random weight) hashing. Every replica
//! that sees the same members computes the same owner with no coordination, and a change of
//! membership moves only the modules of the replica that left, or about 1/N of them to the one
//! that joined — never a module between two replicas that both stay.

use sha2::{Digest as _, Sha256};

/// The member of `members` that `module` belongs to: the one with the highest weight for it;
/// `None` when there are no members. Ties (a 64-bit collision) go to the smaller name.
pub fn owner<'a>(members: impl IntoIterator<Item = &'a str>, module: &str) -> Option<&'a str> {
    members
        .into_iter()
        .map(|member| (weight(member, module), member))
        .max_by(|(wa, a), (wb, b)| wa.cmp(wb).then_with(|| b.cmp(a)))
        .map(|(_, member)| member)
}

/// A stable 64-bit weight of the pair: the first 8 bytes of SHA-256(member NUL module). Stable
/// across builds and versions (unlike std's hasher), so replicas of two releases agree during
/// a rolling upgrade.
fn weight(member: &str, module: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(member.as_bytes());
    hasher.update([0]);
    hasher.update(module.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modules() -> Vec<String> {
        (0..1000).map(|i| format!("ns-{i}.controller")).collect()
    }

    fn assignment<'a>(members: &[&'a str], modules: &[String]) -> Vec<&'a str> {
        modules
            .iter()
            .map(|m| owner(members.iter().copied(), m).expect("members"))
            .collect()
    }

    #[test]
    fn no_members_no_owner_and_the_same_answer_in_any_order() {
        assert_eq!(owner([], "m"), None);
        for m in modules() {
            assert_eq!(owner(["a", "b", "c"], &m), owner(["c", "a", "b"], &m));
        }
    }

    #[test]
    fn modules_spread_about_evenly() {
        let modules = modules();
        let owners = assignment(&["host-a", "host-b", "host-c"], &modules);
        for member in ["host-a", "host-b", "host-c"] {
            let share = owners.iter().filter(|o| **o == member).count();
            assert!((250..=420).contains(&share), "{member}: {share} of 1000");
        }
    }

    #[test]
    fn a_joining_member_takes_about_a_quarter_and_nothing_else_moves() {
        let modules = modules();
        let before = assignment(&["host-a", "host-b", "host-c"], &modules);
        let after = assignment(&["host-a", "host-b", "host-c", "host-d"], &modules);
        let moved: Vec<_> = before.iter().zip(&after).filter(|(b, a)| b != a).collect();
        assert!(
            moved.iter().all(|(_, a)| **a == "host-d"),
            "moved only to the new member"
        );
        assert!(
            (180..=320).contains(&moved.len()),
            "{} of 1000 moved",
            moved.len()
        );
    }

    #[test]
    fn a_leaving_member_gives_away_only_its_own() {
        let modules = modules();
        let before = assignment(&["host-a", "host-b", "host-c"], &modules);
        let after = assignment(&["host-a", "host-b"], &modules);
        for (b, a) in before.iter().zip(&after) {
            if *b != "host-c" {
                assert_eq!(b, a, "a module of a staying member moved");
            }
        }
    }
}
