// tests/ir/validate_page_test.cpp: shared scratch pages: page.clobber (reuse while a value is
// still needed, ordered or not, within a task), page.size and page.bind, with accepted reuse.
#include <catch2/catch.hpp>

#include "ir/validate.h"
#include "ir/program_builder.h"

using namespace amk::ir;
using amk::testing::find_rule;
using amk::testing::ProgramBuilder;
using Catch::Contains;

namespace {

void expect_ok(const ValidationResult& r) {
  INFO(r.report());
  REQUIRE(r.ok);
}

Diagnostic expect_error(const ValidationResult& r, const std::string& rule) {
  INFO(r.report());
  REQUIRE_FALSE(r.ok);
  const Diagnostic* d = find_rule(r, rule);
  REQUIRE(d != nullptr);
  return *d;
}

// a and b (8 x F32 = 32 bytes) share page 0. write_a -> read_a, write_b -> read_b.
struct Reuse {
  ProgramBuilder b;
  int x, a, bv, ya, yb, ca, cra, cb;
  ProgramBuilder::TaskRef write_a, read_a, write_b, read_b;
  Reuse()
      : x(b.input("x", {8})), a(b.act("a", {8})), bv(b.act("b", {8})), ya(b.output("ya", {8})), yb(b.output("yb", {8})),
        ca(b.counter("a ready")), cra(b.counter("a consumed")), cb(b.counter("b ready")),
        write_a(b.copy("write_a", x, a).signal(ca)), read_a(b.copy("read_a", a, ya).signal(cra).wait(ca, 1)),
        write_b(b.copy("write_b", x, bv).signal(cb)), read_b(b.copy("read_b", bv, yb).wait(cb, 1)) {
    b.page({a, bv}, 32);
  }
};

}  // namespace

TEST_CASE("validate page: reuse after the last reader is fine", "[ir]") {
  Reuse r;
  r.write_b.wait(r.cra, 1);
  expect_ok(validate(r.b.build()));
}

TEST_CASE("validate page.clobber: reuse not ordered after the last reader", "[ir]") {
  Reuse r;
  r.write_b.wait(r.ca, 1);  // after a is written, but not after it is read
  const Diagnostic& d = expect_error(validate(r.b.build()), "page.clobber");
  CHECK_THAT(d.message, Contains("task 1 (read_a) uses buffer 1 \"a\" and task 2 (write_b) writes buffer 2 \"b\""));
  CHECK_THAT(d.message, Contains("page 0 bytes [0, 32)"));
  CHECK(d.buffers.size() == 2);
}

TEST_CASE("validate page.clobber: another buffer written in between, even in order", "[ir]") {
  Reuse r;
  r.write_b.wait(r.ca, 1);
  r.read_a.t().waits[0] = Wait{CounterId(r.cb), 1};  // read_a now runs after write_b overwrote a
  const Diagnostic& d = expect_error(validate(r.b.build()), "page.clobber");
  CHECK_THAT(d.message, Contains("task 1 (read_a) reads buffer 1 \"a\" from page 0 bytes [0, 32), but task 2 (write_b) writes buffer 2 \"b\" there before the read"));
}

TEST_CASE("validate page.clobber: a task reading one buffer and writing another on its page", "[ir]") {
  ProgramBuilder b;
  const int x = b.input("x", {8}), a = b.act("a", {8}), c = b.act("c", {8}), y = b.output("y", {8});
  const int c0 = b.counter(), c1 = b.counter();
  b.copy("make_a", x, a).signal(c0);
  b.copy("a_to_c", a, c).signal(c1).wait(c0, 1);
  b.copy("out", c, y).wait(c1, 1);
  expect_ok(validate(b.build()));
  b.page({a, c}, 32);
  CHECK_THAT(expect_error(validate(b.build()), "page.clobber").message,
             Contains("task 1 (a_to_c) reads buffer 1 \"a\" and writes buffer 2 \"c\", which share page 0"));
}

TEST_CASE("validate page: byte ranges decide overlap", "[ir]") {
  // a [1, 8] F32 = 32 bytes, its tile cols [4, 8) is bytes [16, 32); b [4] F32 is bytes [0, 16).
  ProgramBuilder b;
  const int x = b.input("x", {1, 8}), w = b.weight("W", {8, 8}), a = b.act("a", {1, 8});
  const int x4 = b.input("x4", {4}), bv = b.act("b", {4});
  b.gemv("tile_hi", x, w, a, 8, 4, 4);
  b.copy("write_b", x4, bv);
  b.page({a, bv}, 32);
  expect_ok(validate(b.build()));  // unordered, but bytes [16, 32) and [0, 16) do not meet
  b.program().buffers[bv].shape = {5};  // bytes [0, 20) now overlap the tile
  b.program().buffers[x4].shape = {5};
  CHECK_THAT(expect_error(validate(b.build()), "page.clobber").message, Contains("page 0 bytes [16, 20)"));
}

TEST_CASE("validate page.size and page.bind", "[ir]") {
  SECTION("a page smaller than a bound buffer") {
    Reuse r;
    r.write_b.wait(r.cra, 1);
    r.b.program().pages->pages[0].nbytes = 16;
    CHECK_THAT(expect_error(validate(r.b.build()), "page.size").message, Contains("buffer 1 \"a\" needs 32 bytes but page 0 has 16"));
  }
  SECTION("a buffer bound twice") {
    Reuse r;
    r.write_b.wait(r.cra, 1);
    r.b.page({r.a}, 32);
    CHECK_THAT(expect_error(validate(r.b.build()), "page.size").message, Contains("buffer 1 \"a\" is bound to a page twice"));
  }
  SECTION("an IO_OUTPUT on a shared page") {
    Reuse r;
    r.write_b.wait(r.cra, 1);
    r.b.page({r.ya}, 32);
    CHECK_THAT(expect_error(validate(r.b.build()), "page.bind").message, Contains("buffer 3 \"ya\" is a IO_OUTPUT buffer"));
  }
}
