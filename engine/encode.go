package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// encode writes one answer as a line of ASCII JSON. Bytes that are not UTF-8 (a cut inside a character)
// travel as lone-surrogate escapes \udcXX, one per byte, as the protocol says.
func encode(out *bufio.Writer, fields []field) {
	out.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			out.WriteByte(',')
		}
		encodeString(out, f.name)
		out.WriteByte(':')
		encodeValue(out, f.value)
	}
	out.WriteString("}\n")
}

func encodeValue(out *bufio.Writer, value any) {
	switch v := value.(type) {
	case nil:
		out.WriteString("null")
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case int:
		out.WriteString(strconv.Itoa(v))
	case int64:
		out.WriteString(strconv.FormatInt(v, 10))
	case json.Number:
		out.WriteString(v.String())
	case string:
		encodeString(out, v)
	case []string:
		out.WriteByte('[')
		for i, s := range v {
			if i > 0 {
				out.WriteByte(',')
			}
			encodeString(out, s)
		}
		out.WriteByte(']')
	default:
		encodeString(out, fmt.Sprint(v))
	}
}

func encodeString(out *bufio.Writer, s string) {
	out.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				out.WriteByte('\\')
				out.WriteByte(c)
			case c < 0x20 || c == 0x7f:
				fmt.Fprintf(out, `\u%04x`, c)
			default:
				out.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(out, `\udc%02x`, c)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(out, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(out, `\u%04x`, r)
		}
		i += size
	}
	out.WriteByte('"')
}
