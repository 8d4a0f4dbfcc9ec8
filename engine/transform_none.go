//go:build !nats_v29

package main

// Before 2.9 the transform engine is unexported (newTransform in server/accounts.go), so this build
// answers no transform or partition questions: hello leaves those operations out.
