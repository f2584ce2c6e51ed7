package hw

import (
	"fmt"

	"kvsim/hw/store"
)

// ssd and nvmeof are bucket stores in o.Dir (NVMe-oF where o.Dir is on
// a fabric namespace).
func init() {
	for _, kind := range []string{"ssd", "nvmeof"} {
		registerTierKind(kind, tierKind{open: func(ss *Stores, t TierSpec, o TierOptions) (store.Store, string, error) {
			if t.Device != "" {
				return deviceStore(t, o)
			}
			s, note, op, err := diskStore(t, o)
			if err == nil {
				ss.Opened = append(ss.Opened, op)
			}
			if err == nil && t.Kind == "nvmeof" {
				ss.Notes = append(ss.Notes, fmt.Sprintf("tier %q: NVMe-oF is a bucket store in %s (%s)", t.Name, o.Dir, fabricState("")))
			}
			return s, note, err
		}})
	}
}
