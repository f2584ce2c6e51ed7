package scenario

import (
	"math"
	"testing"
)

// Model.Size by hand: 2 x 2 bytes x 32 layers x 8 heads x 128 = 128 KiB a
// token, 64 MiB a 512-token block; 1000 tokens take 2 whole blocks.
func TestModelSize(t *testing.T) {
	m := Model{Layers: 32, KVHeads: 8, HeadDim: 128, DType: "bf16", BlockTokens: 512}
	budget := int64(1 << 30)
	tiers := []Tier{{Name: "hbm", Kind: "hbm", Capacity: 80 << 30}, {Name: "ssd", Kind: "ssd", Capacity: 1 << 40}}
	r, err := m.Size(1000, &budget, tiers)
	if err != nil {
		t.Fatal(err)
	}
	if r.BytesPerToken != 128<<10 || r.BytesPerBlock != 64<<20 || *r.BlocksPerRequest != 2 || *r.BytesPerRequest != 1000*128<<10 ||
		*r.BlockBytesPerRequest != 128<<20 || *r.TokensFit != 8192 || *r.BlocksFit != 16 || *r.RequestsFit != 8 {
		t.Errorf("Size = %+v", r)
	}
	// The budget stands for the hbm tier; the others keep their capacity.
	if len(r.Tiers) != 2 || r.Tiers[0].Blocks != 16 || r.Tiers[1].Blocks != 1<<40/(64<<20) {
		t.Errorf("tiers %+v", r.Tiers)
	}
	if r, err := m.Size(0, nil, nil); err != nil || r.BlocksPerRequest != nil || r.HBMBytes != nil || r.RequestsFit != nil {
		t.Errorf("no tokens, no budget: %+v %v", r, err)
	}
	m.Layers = math.MaxInt32
	m.HeadDim = math.MaxInt32
	if _, err := m.Size(0, nil, nil); err == nil || err.Error() != "bytes per token overflow int64" {
		t.Errorf("overflow: %v", err)
	}
}
