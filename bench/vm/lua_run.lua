-- lua_run.lua: runs one bench/vm kernel written in Lua, for bench_vm.c's LuaJIT columns.
--
--   luajit [-joff] lua_run.lua DATADIR SRCDIR KERNEL REPS [ARG...]
--
-- SRCDIR/KERNEL.lua returns a table: `regions`, the names of the regions it reads, and
-- `run(r, ...)`, the kernel, called with r[name] a `const uint8_t *` to the bytes of
-- DATADIR/<name>.bin (written by bench_vm), r[name .. "_len"] their length, r[name .. "_str"]
-- the same bytes as a Lua string, and the numeric arguments.  Each of the REPS calls is timed with CLOCK_MONOTONIC and prints
-- "<result as unsigned decimal> <milliseconds>"; bench_vm checks the result.
local ffi = require("ffi")
ffi.cdef[[
struct bench_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct bench_timespec *ts);
]]
local CLOCK_MONOTONIC = 1

local datadir, srcdir, kernel, reps = arg[1], arg[2], arg[3], tonumber(arg[4])
local args = {}
for i = 5, #arg do args[#args + 1] = tonumber(arg[i]) end

local k = dofile(srcdir .. "/" .. kernel .. ".lua")
local r, keep = {}, {}
for _, name in ipairs(k.regions) do
	local f = assert(io.open(datadir .. "/" .. name .. ".bin", "rb"))
	local s = f:read("*a")
	f:close()
	keep[#keep + 1] = s              -- the string owns the bytes the pointer reaches
	r[name] = ffi.cast("const uint8_t *", s)
	r[name .. "_len"] = #s
	r[name .. "_str"] = s
end

local ts = ffi.new("struct bench_timespec")
local function now_ms()
	ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
	return tonumber(ts.tv_sec) * 1e3 + tonumber(ts.tv_nsec) / 1e6
end

-- an unsigned 64-bit cdata or an integral number, as decimal digits
local function udec(v)
	if type(v) == "number" then return string.format("%.0f", v) end
	return (tostring(ffi.cast("uint64_t", v)):gsub("ULL$", ""))
end

-- Fewer than REPS runs once BUDGET_MS are spent: LuaJIT's interpreter on 64-bit cdata takes
-- a minute for one run of isum at full size.
local BUDGET_MS = 2000
local spent = 0
for _ = 1, reps do
	local t0 = now_ms()
	local v = k.run(r, unpack(args))
	local t = now_ms() - t0
	io.write(udec(v), " ", string.format("%.3f", t), "\n")
	io.flush()
	spent = spent + t
	if spent > BUDGET_MS then break end
end
