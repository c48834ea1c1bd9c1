-- SPDX-License-Identifier: MIT
-- burst.lua - wrk script for test_burst.sh: random requests over N
-- self-describing files (/b/I.txt: "FILE I LEN\n" then LEN-header bytes of
-- one letter chosen by I). Every response body is checked; done() prints
--   ORACLE ok=<n> bad=<n> hits=<n>
-- so the test can require bad=0 (no body from another entry, no truncation).
local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

function init(args)
  n = tonumber(args[1])
  ok, bad, hits = 0, 0, 0
  math.randomseed(os.time() * 100 + id)
end

function request()
  return wrk.format("GET", "/b/" .. math.random(0, n - 1) .. ".txt")
end

function response(status, headers, body)
  if status ~= 200 then
    bad = bad + 1
    return
  end
  local i, len = string.match(body, "^FILE (%d+) (%d+)\n")
  if not i or #body ~= tonumber(len) then
    bad = bad + 1
    return
  end
  local head = #("FILE " .. i .. " " .. len .. "\n")
  local c = string.char(97 + tonumber(i) % 26)
  if body:sub(head + 1) ~= string.rep(c, #body - head) then
    bad = bad + 1
    return
  end
  ok = ok + 1
  local x = headers["X-Cache"] or headers["x-cache"] or ""
  if string.sub(x, 1, 3) == "HIT" then
    hits = hits + 1
  end
end

function done(summary, latency, requests)
  local o, b, h = 0, 0, 0
  for _, t in ipairs(threads) do
    o = o + t:get("ok")
    b = b + t:get("bad")
    h = h + t:get("hits")
  end
  io.write(string.format("ORACLE ok=%d bad=%d hits=%d\n", o, b, h))
end
