//! Only tests here (tests/aws.rs).
