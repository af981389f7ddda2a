//! Conversions, literals and the undefined behaviour of the operators on chosen cases; the
//! exhaustive comparison with gcc's UBSan is `tests/gcc_ubsan.rs`.

use super::*;
use IntKind::*;

#[test]
fn promotions_and_usual_arithmetic_conversions() {
    assert_eq!(usual_arithmetic(UChar, Short), Int);
    assert_eq!(usual_arithmetic(Int, UInt), UInt);
    assert_eq!(usual_arithmetic(Long, UInt), Long);
    assert_eq!(usual_arithmetic(LongLong, ULong), ULongLong);
    assert_eq!(usual_arithmetic(Long, ULongLong), ULongLong);
    assert_eq!(usual_arithmetic(Bool, Bool), Int);
    assert_eq!(usual_arithmetic(UShort, UShort), Int);
}

#[test]
fn the_papers_example_of_a_conversion() {
    // int a = 0; short b = -1: a + b is -1; with unsigned a it is UINT_MAX.
    let b = Value::new(Short, -1);
    assert_eq!(
        eval_binary(BinaryOp::Add, Value::new(Int, 0), b),
        Ok(Value::new(Int, -1))
    );
    assert_eq!(
        eval_binary(BinaryOp::Add, Value::new(UInt, 0), b),
        Ok(Value::new(UInt, 4294967295))
    );
    assert_eq!(
        eval_binary(BinaryOp::Lt, Value::new(UInt, 0), b),
        Ok(Value::new(Int, 1))
    );
}

#[test]
fn undefined_behaviour_is_reported() {
    let int = |v| Value::new(Int, v);
    assert_eq!(
        eval_binary(BinaryOp::Add, int(i32::MAX as i128), int(1)),
        Err(Ub::SignedOverflow)
    );
    assert_eq!(
        eval_binary(BinaryOp::Div, int(i32::MIN as i128), int(-1)),
        Err(Ub::SignedOverflow)
    );
    assert_eq!(
        eval_binary(BinaryOp::Rem, int(i32::MIN as i128), int(-1)),
        Err(Ub::SignedOverflow)
    );
    assert_eq!(eval_binary(BinaryOp::Rem, int(5), int(0)), Err(Ub::DivisionByZero));
    assert_eq!(eval_binary(BinaryOp::Shl, int(1), int(32)), Err(Ub::ShiftTooFar));
    assert_eq!(eval_binary(BinaryOp::Shl, int(1), int(-1)), Err(Ub::NegativeShift));
    assert_eq!(eval_binary(BinaryOp::Shl, int(-1), int(1)), Err(Ub::ShiftOfNegative));
    assert_eq!(eval_binary(BinaryOp::Shl, int(1), int(31)), Err(Ub::ShiftOverflow));
    assert_eq!(eval_binary(BinaryOp::Shl, int(1), int(30)), Ok(int(1 << 30)));
    assert_eq!(eval_binary(BinaryOp::Shr, int(-8), int(1)), Ok(int(-4)));
    assert_eq!(eval_unary(UnaryOp::Neg, int(i32::MIN as i128)), Err(Ub::SignedOverflow));
    assert_eq!(
        eval_unary(UnaryOp::Neg, Value::new(UInt, 1)),
        Ok(Value::new(UInt, u32::MAX as i128))
    );
    // A char operand is promoted to int first: no overflow.
    assert_eq!(eval_unary(UnaryOp::Neg, Value::new(SChar, -128)), Ok(int(128)));
    let ull = Value::new(ULongLong, u64::MAX as i128);
    assert_eq!(eval_binary(BinaryOp::Mul, ull, ull), Ok(Value::new(ULongLong, 1)));
    assert_eq!(
        eval_binary(BinaryOp::Shl, ull, Value::new(Int, 63)),
        Ok(Value::new(ULongLong, 1i128 << 63))
    );
}

#[test]
fn literals_have_their_type_and_value() {
    assert_eq!(Int.literal(i32::MIN as i128), "(-2147483647-1)");
    assert_eq!(ULongLong.literal(5), "5ULL");
    assert_eq!(Long.literal(-3), "(-3L)");
    assert_eq!(SChar.literal(-3), "((signed char)(-3))");
    assert_eq!(convert(300, UChar), 44);
    assert_eq!(convert(200, SChar), -56);
    assert_eq!(convert(-1, ULong), u64::MAX as i128);
    assert_eq!(convert(256, Bool), 1);
}
