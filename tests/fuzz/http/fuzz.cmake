# Request bytes come from any client: the HTTP request reader must give a
# request, ask for more, or refuse with a status, never crash or overrun.
find_package(Boost 1.81 REQUIRED CONFIG)
volt_fuzz_target(http_request_fuzzer
  SOURCES tests/fuzz/http/RequestReaderFuzzer.cpp
          runtime/http/RequestReader.cpp
  LIBS Boost::headers
  CORPUS tests/fuzz/http/corpus)
target_compile_definitions(http_request_fuzzer PRIVATE BOOST_BEAST_USE_STD_STRING_VIEW)
