module nats-conformance/adapters/nats-jwt

go 1.25.0

require github.com/nats-io/jwt/v2 v2.8.3

require (
	github.com/nats-io/nkeys v0.4.17 // indirect
	golang.org/x/crypto v0.52.0 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
