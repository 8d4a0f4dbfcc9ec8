module nats-conformance/mutator

go 1.22
