// Port spec parsing: what each kind accepts, and that every mistake names the key at fault.
#include <gtest/gtest.h>

#include "pmd_glue/dpdk_spec.h"

namespace uroce::glue {
namespace {

PortSpec parse_ok(const std::string& text) {
  PortSpec s;
  std::string err;
  EXPECT_TRUE(parse_port_spec(text, &s, &err)) << text << ": " << err;
  return s;
}

std::string parse_err(const std::string& text) {
  PortSpec s;
  std::string err;
  EXPECT_FALSE(parse_port_spec(text, &s, &err)) << text << " was accepted";
  return err;
}

TEST(PortSpec, Memif) {
  PortSpec s = parse_ok("memif:socket=/run/uroce/a.sock,role=server,id=7");
  EXPECT_EQ(s.kind, PortKind::kMemif);
  EXPECT_EQ(s.socket, "/run/uroce/a.sock");
  EXPECT_TRUE(s.server);
  EXPECT_EQ(s.id, 7u);
  EXPECT_EQ(s.effective_wait_ms(), 0);  // a server does not wait for its peer

  s = parse_ok("memif:role=client,socket=/tmp/x,rsize=8,wait=50,mbufs=1023");
  EXPECT_FALSE(s.server);
  EXPECT_EQ(s.log2_ring, 8);
  EXPECT_EQ(s.effective_wait_ms(), 50);
  EXPECT_EQ(s.mbufs, 1023u);
  EXPECT_EQ(vdev_args(s, 4352), "role=client,id=0,socket=/tmp/x,socket-abstract=no,bsize=4352,rsize=8");

  s = parse_ok("memif:socket=m.sock,role=client");
  EXPECT_EQ(vdev_args(s, 4352), "role=client,id=0,socket=m.sock,socket-abstract=no,bsize=4352,rsize=10");
  EXPECT_EQ(s.effective_wait_ms(), 3000);

  // driver=uroce: uroce's own memif client instead of DPDK's PMD; a client only.
  EXPECT_FALSE(s.own_driver);
  EXPECT_TRUE(parse_ok("memif:socket=m.sock,role=client,driver=uroce").own_driver);
  EXPECT_FALSE(parse_ok("memif:socket=m.sock,role=client,driver=dpdk").own_driver);
  EXPECT_NE(parse_err("memif:socket=m.sock,role=server,driver=uroce").find("'driver'"), std::string::npos);
  EXPECT_NE(parse_err("memif:socket=m.sock,role=client,driver=vpp").find("'driver'"), std::string::npos);
  EXPECT_NE(parse_err("af_packet:iface=x,driver=uroce").find("'driver'"), std::string::npos);

  // Abstract sockets have no permissions (any local user could attach): refused, naming the value.
  const std::string e = parse_err("memif:socket=@uroce,role=client");
  EXPECT_NE(e.find("'@uroce'"), std::string::npos) << e;
  EXPECT_NE(e.find("abstract"), std::string::npos) << e;
}

TEST(PortSpec, AfPacketTapRing) {
  PortSpec s = parse_ok("af_packet:iface=veth0");
  EXPECT_EQ(s.kind, PortKind::kAfPacket);
  // Slots for uroce's largest frame when the MTU is unknown or large: 8 MiB of them, whole blocks.
  EXPECT_EQ(vdev_args(s, 4352), "iface=veth0,qpairs=1,framesz=4384,blocksz=561152,framecnt=1920");
  EXPECT_EQ(vdev_args(s, 4352, 4210), "iface=veth0,qpairs=1,framesz=4384,blocksz=561152,framecnt=1920");
  // 2048-byte slots (two per page) when the MTU fits: 4096 of them.
  EXPECT_EQ(vdev_args(s, 4352, 1500), "iface=veth0,qpairs=1,framesz=2048,blocksz=4096,framecnt=4096");
  EXPECT_EQ(vdev_args(s, 4352, 1964), "iface=veth0,qpairs=1,framesz=2048,blocksz=4096,framecnt=4096");
  EXPECT_EQ(vdev_args(s, 4352, 1965), "iface=veth0,qpairs=1,framesz=4384,blocksz=561152,framecnt=1920");
  s = parse_ok("af_packet:iface=veth0,rsize=6");
  EXPECT_EQ(vdev_args(s, 4352, 1500), "iface=veth0,qpairs=1,framesz=2048,blocksz=4096,framecnt=64");
  EXPECT_EQ(vdev_args(s, 4352),
            "iface=veth0,qpairs=1,framesz=4384,blocksz=561152,framecnt=128");  // whole blocks
  s = parse_ok("tap:iface=uroce0");
  EXPECT_EQ(s.kind, PortKind::kTap);
  EXPECT_EQ(vdev_args(s, 4352), "iface=uroce0");
  s = parse_ok("ring:link1,wait=0");
  EXPECT_EQ(s.kind, PortKind::kRing);
  EXPECT_EQ(s.ring, "link1");
  EXPECT_EQ(s.effective_wait_ms(), 0);
}

TEST(PortSpec, ErrorsNameTheKey) {
  EXPECT_NE(parse_err("memif:socket=/x,role=server,colour=blue").find("'colour'"), std::string::npos);
  EXPECT_NE(parse_err("memif:socket=/x,role=server,colour=blue").find("valid: socket, role"),
            std::string::npos);
  EXPECT_NE(parse_err("memif:socket=/x,role=master").find("'role'"), std::string::npos);
  EXPECT_NE(parse_err("memif:socket=/x,role=server,id=-1").find("'id'"), std::string::npos);
  EXPECT_NE(parse_err("memif:socket=/x,role=server,role=client").find("'role' given twice"),
            std::string::npos);
  EXPECT_NE(parse_err("memif:role=server").find("'socket'"), std::string::npos);
  EXPECT_NE(parse_err("memif:socket=/x").find("'role'"), std::string::npos);
  EXPECT_NE(parse_err("memif:socket=" + std::string(200, 'a') + ",role=server").find("'socket'"),
            std::string::npos);
  EXPECT_NE(parse_err("af_packet:iface=averyveryverylongname").find("'iface'"), std::string::npos);
  EXPECT_NE(parse_err("af_packet:ifname=eth0").find("'ifname'"), std::string::npos);
  EXPECT_NE(parse_err("af_packet:").find("'iface'"), std::string::npos);
  EXPECT_NE(parse_err("tap:iface=x,socket=/y").find("'socket'"), std::string::npos);
  EXPECT_NE(parse_err("ring:").find("ring"), std::string::npos);
  EXPECT_NE(parse_err("ring:a,b").find("'b'"), std::string::npos);
  EXPECT_NE(parse_err("ring:a,wait=soon").find("'wait'"), std::string::npos);
  EXPECT_NE(parse_err("ring:a,mbufs=10").find("'mbufs'"), std::string::npos);
  EXPECT_NE(parse_err("vhost:iface=x").find("'vhost'"), std::string::npos);
  EXPECT_NE(parse_err("memif").find("KIND:ARGS"), std::string::npos);
  EXPECT_NE(parse_err("memif:socket=/x,role=server,id").find("'id'"), std::string::npos);
}

}  // namespace
}  // namespace uroce::glue
