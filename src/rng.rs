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
}
