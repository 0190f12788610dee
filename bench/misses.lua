-- wrk script for bench/profile.sh --miss: every request asks for a key not asked before
-- (/bench/blob/m<thread>-<n>-<random>?size=SIZE), so each one is a miss.
local size = os.getenv("SIZE") or "1024"
local threads = 0
local n = 0

function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end

function init(args)
  math.randomseed(os.time() + id)
end

function request()
  n = n + 1
  return wrk.format("GET", "/bench/blob/m" .. id .. "-" .. n .. "-" .. math.random(1, 1000000000) .. "?size=" .. size)
end
