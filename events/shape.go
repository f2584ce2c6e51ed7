package events

import (
	"encoding/binary"
	"fmt"
)

// maxDepth bounds nesting: an event batch is four levels deep.
const maxDepth = 32

// checkShape walks a msgpack value without building it and rejects
// declared lengths that the remaining bytes cannot hold, so that a short
// hostile frame cannot make the decoder allocate gigabytes.
func checkShape(b []byte) error {
	pos := 0
	need := func(n uint64) error {
		if n > uint64(len(b)-pos) {
			return fmt.Errorf("declared length %d exceeds the %d bytes left", n, len(b)-pos)
		}
		return nil
	}
	readN := func(w int) (uint64, error) {
		if err := need(uint64(w)); err != nil {
			return 0, err
		}
		var v uint64
		switch w {
		case 1:
			v = uint64(b[pos])
		case 2:
			v = uint64(binary.BigEndian.Uint16(b[pos:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(b[pos:]))
		}
		pos += w
		return v, nil
	}
	skip := func(n uint64) error {
		if err := need(n); err != nil {
			return err
		}
		pos += int(n)
		return nil
	}
	stack := []uint64{1} // values still to read at each level
	for len(stack) > 0 {
		if stack[len(stack)-1] == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		stack[len(stack)-1]--
		if pos >= len(b) {
			return fmt.Errorf("truncated")
		}
		c := b[pos]
		pos++
		var items uint64 // elements of a container just opened
		var err error
		container := false
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items, container = 2*uint64(c&0x0f), true
		case c >= 0x90 && c <= 0x9f:
			items, container = uint64(c&0x0f), true
		case c >= 0xa0 && c <= 0xbf:
			err = skip(uint64(c & 0x1f))
		case c == 0xc4 || c == 0xd9:
			err = skipLen(readN, skip, 1, 0)
		case c == 0xc5 || c == 0xda:
			err = skipLen(readN, skip, 2, 0)
		case c == 0xc6 || c == 0xdb:
			err = skipLen(readN, skip, 4, 0)
		case c == 0xc7:
			err = skipLen(readN, skip, 1, 1)
		case c == 0xc8:
			err = skipLen(readN, skip, 2, 1)
		case c == 0xc9:
			err = skipLen(readN, skip, 4, 1)
		case c == 0xca:
			err = skip(4)
		case c == 0xcb:
			err = skip(8)
		case c >= 0xcc && c <= 0xcf:
			err = skip(1 << (c - 0xcc))
		case c >= 0xd0 && c <= 0xd3:
			err = skip(1 << (c - 0xd0))
		case c >= 0xd4 && c <= 0xd8:
			err = skip(1 + 1<<(c-0xd4))
		case c == 0xdc || c == 0xde:
			items, err = readN(2)
			container = true
		case c == 0xdd || c == 0xdf:
			items, err = readN(4)
			container = true
		default:
			return fmt.Errorf("invalid code 0x%02x", c)
		}
		if err != nil {
			return err
		}
		if !container {
			continue
		}
		if c == 0xde || c == 0xdf {
			items *= 2
		}
		// Every element takes at least one byte.
		if err := need(items); err != nil {
			return err
		}
		if len(stack) >= maxDepth {
			return fmt.Errorf("nested deeper than %d", maxDepth)
		}
		stack = append(stack, items)
	}
	return nil
}

func skipLen(readN func(int) (uint64, error), skip func(uint64) error, w int, extra uint64) error {
	n, err := readN(w)
	if err != nil {
		return err
	}
	return skip(n + extra)
}
