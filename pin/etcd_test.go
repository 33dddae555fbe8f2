package pin

import (
	"testing"
)

func TestEtcdApproveCheck(t *testing.T) {
	ep := startEtcd(t)
	testEtcd = ep
	defer func() { testEtcd = "" }()
	s := openTestStore(t, Options{})
	o := obs("acme:weather", 1, tool(t, "get_weather", "1.0.0", weatherDef, keyA, "net"))
	if _, _, err := s.Approve(o, ApproveOptions{By: "alice"}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Check(o, "alice")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", c.Tools)
	if _, err := s.VerifyLog(); err != nil {
		t.Fatal(err)
	}
}
