//! The core's source of randomness: owner ids and backoff jitter.
//!
//! The core cannot read the operating system's random source (that is I/O), so the driver
//! seeds it once with 256 bits from one. Tests seed it with constants and get the same run
//! every time. Not cryptographic: owner ids need to be unique, not secret, and they are unique
//! across processes only because each driver seeds from the operating system.

/// xoshiro256** seeded through splitmix64.
#[derive(Clone, Debug)]
pub(crate) struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub(crate) fn from_seed(seed: [u8; 32]) -> Rng {
        let mut s = [0u64; 4];
        for (i, chunk) in seed.chunks_exact(8).enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            // Mix each word so that seeds with few bits set still start well spread.
            let mut x =
                u64::from_le_bytes(b) ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1));
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            s[i] = x ^ (x >> 31);
        }
        if s == [0; 4] {
            s[0] = 1;
        }
        Rng { s }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    pub(crate) fn next_u128(&mut self) -> u128 {
        (u128::from(self.next_u64()) << 64) | u128::from(self.next_u64())
    }

    /// A uniform value in `0..=max`.
    pub(crate) fn up_to(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            return self.next_u64();
        }
        // Multiply-shift: bias below 2^-64 per draw, irrelevant for jitter.
        ((u128::from(self.next_u64()) * (u128::from(max) + 1)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn same_seed_same_stream_and_different_seeds_differ() {
        let mut a = Rng::from_seed([7; 32]);
        let mut b = Rng::from_seed([7; 32]);
        let mut c = Rng::from_seed([8; 32]);
        let xs: Vec<u64> = (0..4).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..4).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..4).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn zero_seed_is_not_stuck() {
        let mut r = Rng::from_seed([0; 32]);
        let a = r.next_u64();
        let b = r.next_u64();
        assert_ne!(a, b);
    }

    #[test]
    fn up_to_stays_in_range_and_covers_it() {
        let mut r = Rng::from_seed([1; 32]);
        let mut seen = [false; 4];
        for _ in 0..1000 {
            let v = r.up_to(3);
            assert!(v <= 3);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(r.up_to(0), 0);
    }

    // Known answers: the generator must be xoshiro256** and the seeding splitmix64 exactly,
    // not something that merely looks random. The vectors are the reference implementations'
    // (Blackman and Vigna's C code), computed independently of this one.

    #[test]
    fn the_state_is_splitmix64_of_the_seed_words() {
        // An all-zero seed: each state word is splitmix64's next output from state 0.
        let r = Rng::from_seed([0; 32]);
        assert_eq!(
            r.s,
            [
                0xe220_a839_7b1d_cdaf,
                0x6e78_9e6a_a1b9_65f4,
                0x06c4_5d18_8009_454f,
                0xf88b_b8a8_724c_81ec,
            ]
        );
        // A seed word is mixed in before splitmix64's finaliser: word 0 = 1 gives the
        // finaliser of golden ^ 1.
        let mut seed = [0u8; 32];
        seed[0] = 1;
        let one = Rng::from_seed(seed);
        assert_ne!(one.s[0], r.s[0]);
        assert_eq!(one.s[1..], r.s[1..]);
    }

    #[test]
    fn the_stream_is_xoshiro256_star_star() {
        let mut r = Rng { s: [1, 2, 3, 4] };
        let got: Vec<u64> = (0..10).map(|_| r.next_u64()).collect();
        assert_eq!(
            got,
            [
                11520,
                0,
                1509978240,
                1215971899390074240,
                1216172134540287360,
                607988272756665600,
                16172922978634559625,
                8476171486693032832,
                10595114339597558777,
                2904607092377533576,
            ]
        );
        let mut r = Rng { s: [1, 2, 3, 4] };
        assert_eq!(r.next_u128(), 11520u128 << 64, "high word first");
        assert_eq!(r.next_u128(), (1509978240u128 << 64) | 1215971899390074240);
    }

    #[test]
    fn owner_ids_do_not_repeat_and_use_all_128_bits() {
        let mut r = Rng::from_seed([42; 32]);
        let ids: std::collections::BTreeSet<u128> = (0..10_000).map(|_| r.next_u128()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(
            ids.iter().any(|id| id >> 64 != 0)
                && ids.iter().any(|id| id & u128::from(u64::MAX) != 0)
        );
    }

    #[test]
    fn up_to_the_largest_value_is_a_plain_draw() {
        let (mut a, mut b) = (Rng::from_seed([5; 32]), Rng::from_seed([5; 32]));
        assert_eq!(a.up_to(u64::MAX), b.next_u64());
        // Multiply-shift: the draw, scaled to the range, rounded down.
        for state in [[1, 2, 3, 4], [0, u64::MAX, 0, 0], [9, 8, 7, 6]] {
            let x = Rng { s: state }.next_u64();
            let want = (u128::from(x) * 10) >> 64;
            assert_eq!(u128::from(Rng { s: state }.up_to(9)), want);
        }
    }
}
