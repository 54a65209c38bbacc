// Package abi is the wire format of the host/guest ABI of Strategy Host: the protobuf messages
// of ../proto/strategy.proto (package strategy.v1), encoded and decoded by hand so the SDK needs
// nothing beyond the standard library.
//
// Strategy authors rarely need it: package sdk hides it. It is public so the test harness
// (package sdktest) and tools can build requests and read answers by hand, as the host does.
//
// Every message has Marshal, which encodes it as proto3 does (fields at their default value are
// left out, repeated enums are packed, maps are repeated entries), and Unmarshal, which reads any
// valid encoding of it: fields in any order, packed or unpacked enums, unknown fields skipped.
// A decoded message's byte fields and strings alias the input, which must not change
// afterwards.
//
// The field numbers and enum values live in numbers.go and enums.go; numbers_test.go checks
// every one of them against strategy.proto, the one contract both SDKs are checked against.
package abi
