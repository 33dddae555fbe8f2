package etcdtest

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// PermType is the access a Perm grants.
type PermType int

// The access types of etcd's role permissions.
const (
	Read PermType = iota + 1
	Write
	ReadWrite
)

func (p PermType) etcd() (clientv3.PermissionType, error) {
	switch p {
	case Read:
		return clientv3.PermissionType(clientv3.PermRead), nil
	case Write:
		return clientv3.PermissionType(clientv3.PermWrite), nil
	case ReadWrite:
		return clientv3.PermissionType(clientv3.PermReadWrite), nil
	}
	return 0, fmt.Errorf("permission type %d is none of Read, Write, ReadWrite", int(p))
}

// Perm is one permission of a role on the keys [Key, RangeEnd), with
// etcd's range semantics: an empty RangeEnd is the single key Key, and
// RangeEnd "\x00" is every key from Key on. Prefix makes the permission
// on every key starting with a prefix.
type Perm struct {
	Key      string
	RangeEnd string
	Type     PermType
}

// Prefix is the permission typ on every key that starts with prefix.
func Prefix(prefix string, typ PermType) Perm {
	return Perm{Key: prefix, RangeEnd: clientv3.GetPrefixRangeEnd(prefix), Type: typ}
}

// Key is the permission typ on the single key key.
func Key(key string, typ PermType) Perm {
	return Perm{Key: key, Type: typ}
}

// AddRole creates the role name with perms through the etcd auth API, as
// RootUser. It fails the test on any error (as when the role exists).
func (c *Cluster) AddRole(name string, perms ...Perm) {
	c.t.Helper()
	if err := c.addRole(name, perms); err != nil {
		c.t.Fatalf("etcdtest: AddRole(%q): %v", name, err)
	}
}

// Grant grants perms to the role name, creating the role if it does not
// exist, as RootUser: roles that cover several prefixes of one cluster.
func (c *Cluster) Grant(name string, perms ...Perm) {
	c.t.Helper()
	if err := c.grant(name, perms); err != nil {
		c.t.Fatalf("etcdtest: Grant(%q): %v", name, err)
	}
}

func (c *Cluster) grant(name string, perms []Perm) error {
	cli, err := c.rootClient()
	if err != nil {
		return err
	}
	ctx, cancel := ctxTimeout()
	defer cancel()
	if _, err := cli.RoleGet(ctx, name); err != nil {
		return c.addRole(name, perms)
	}
	return c.grantPerms(ctx, cli, name, perms)
}

func (c *Cluster) addRole(name string, perms []Perm) error {
	cli, err := c.rootClient()
	if err != nil {
		return err
	}
	ctx, cancel := ctxTimeout()
	defer cancel()
	if _, err := cli.RoleAdd(ctx, name); err != nil {
		return err
	}
	return c.grantPerms(ctx, cli, name, perms)
}

func (c *Cluster) grantPerms(ctx context.Context, cli *clientv3.Client, name string, perms []Perm) error {
	for _, p := range perms {
		typ, err := p.Type.etcd()
		if err != nil {
			return err
		}
		if _, err := cli.RoleGrantPermission(ctx, name, p.Key, p.RangeEnd, typ); err != nil {
			return fmt.Errorf("grant %v: %w", p, err)
		}
	}
	return nil
}

// AddUser creates user with password and grants it roles, as RootUser. An
// empty password makes a user without one, which only a client
// certificate with the user's name as common name authenticates. It
// fails the test on any error (as when the user exists or a role does
// not).
func (c *Cluster) AddUser(user, password string, roles ...string) {
	c.t.Helper()
	if err := c.addUser(user, password, roles); err != nil {
		c.t.Fatalf("etcdtest: AddUser(%q): %v", user, err)
	}
}

func (c *Cluster) addUser(user, password string, roles []string) error {
	cli, err := c.rootClient()
	if err != nil {
		return err
	}
	ctx, cancel := ctxTimeout()
	defer cancel()
	opts := &clientv3.UserAddOptions{NoPassword: password == ""}
	if _, err := cli.UserAddWithOptions(ctx, user, password, opts); err != nil {
		return err
	}
	for _, r := range roles {
		if _, err := cli.UserGrantRole(ctx, user, r); err != nil {
			return fmt.Errorf("grant role %q: %w", r, err)
		}
	}
	return nil
}

// enableAuth adds RootUser with RootPassword and the root role, and turns
// authentication on.
func (c *Cluster) enableAuth() error {
	if err := c.addUser(RootUser, c.rootPwd, []string{"root"}); err != nil {
		return fmt.Errorf("enable auth: %w", err)
	}
	cli, err := c.rootClient()
	if err != nil {
		return err
	}
	ctx, cancel := ctxTimeout()
	defer cancel()
	if _, err := cli.AuthEnable(ctx); err != nil {
		return fmt.Errorf("enable auth: %w", err)
	}
	// The client dialled before auth was on holds no token: dial anew.
	c.mu.Lock()
	c.root = nil
	c.mu.Unlock()
	cli.Close()
	return nil
}
