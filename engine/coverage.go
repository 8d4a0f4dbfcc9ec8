//go:build nats_cover

// The "coverage" operation of a -cover build: which blocks of the program the questions asked since the
// last "coverage" request ran, read from the runtime's counters (runtime/coverage, Go 1.20 and later).
// The counters are never cleared, so the counters the program writes when it exits (GOCOVERDIR) still
// hold the whole run.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime/coverage"
)

// block is one counter of the binary: a basic block of one function of one package.
type block struct{ pkg, function, index uint32 }

// counted holds each block's counter as the last "coverage" request read it (blocks never run are absent).
var counted = map[block]uint32{}

func init() { operations["coverage"] = reached }

// reached answers the blocks whose counters grew since the last request, how many of them no earlier
// question had run, and how many blocks have run since the program started.
func reached(request) ([]field, error) {
	var data bytes.Buffer
	if err := coverage.WriteCounters(&data); err != nil {
		return nil, &failure{"internal-error", err.Error()}
	}
	counters, err := decodeCounters(data.Bytes())
	if err != nil {
		return nil, &failure{"internal-error", "counter data: " + err.Error()}
	}
	ran, fresh := 0, 0
	for b, count := range counters {
		before, seen := counted[b]
		if count <= before {
			continue
		}
		ran++
		if !seen {
			fresh++
		}
		counted[b] = count
	}
	return []field{{"blocks", ran}, {"new", fresh}, {"reached", len(counted)}}, nil
}

// Sizes of the counter data file's fixed parts (the Go distribution's internal/coverage/defs.go):
// a header (magic, version, meta-data hash, counter flavor, endianness, padding), then per segment a
// header (function entries, string table length, arguments length) followed by the string table and the
// arguments (padded to four bytes), then the function entries, then a footer.
const (
	fileHeaderSize    = 32
	segmentHeaderSize = 16
	flavorOffset      = 24
	flavorRaw         = 1
	flavorULEB128     = 2
)

var errShort = errors.New("truncated")

// decodeCounters reads the first segment of counter data: each function's nonzero counters.
func decodeCounters(data []byte) (map[block]uint32, error) {
	if len(data) < fileHeaderSize+segmentHeaderSize {
		return nil, errShort
	}
	flavor, bigEndian := data[flavorOffset], data[flavorOffset+1] != 0
	segment := data[fileHeaderSize:]
	entries := binary.LittleEndian.Uint64(segment[0:8])
	tables := uint64(binary.LittleEndian.Uint32(segment[8:12])) + uint64(binary.LittleEndian.Uint32(segment[12:16]))
	if uint64(len(segment)) < segmentHeaderSize+tables {
		return nil, errShort
	}
	rest := segment[segmentHeaderSize+tables:]
	next := func() (uint32, error) {
		switch flavor {
		case flavorULEB128:
			var value uint64
			for shift := uint(0); len(rest) > 0 && shift < 64; shift += 7 {
				b := rest[0]
				rest = rest[1:]
				value |= uint64(b&0x7f) << shift
				if b&0x80 == 0 {
					return uint32(value), nil
				}
			}
			return 0, errShort
		case flavorRaw:
			if len(rest) < 4 {
				return 0, errShort
			}
			word := rest[:4]
			rest = rest[4:]
			if bigEndian {
				return binary.BigEndian.Uint32(word), nil
			}
			return binary.LittleEndian.Uint32(word), nil
		}
		return 0, errors.New("unknown counter flavor")
	}
	counters := map[block]uint32{}
	for ; entries > 0; entries-- {
		var head [3]uint32
		for i := range head {
			value, err := next()
			if err != nil {
				return nil, err
			}
			head[i] = value
		}
		for index := uint32(0); index < head[0]; index++ {
			count, err := next()
			if err != nil {
				return nil, err
			}
			if count > 0 {
				counters[block{head[1], head[2], index}] = count
			}
		}
	}
	return counters, nil
}
