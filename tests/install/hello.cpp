// Built by scripts/install-check.sh against an installed zkl, the way a C++
// program is built:  c++ -std=c++17 hello.cpp $(pkg-config --cflags --libs zkl)
//   ./hello HOSTS
#include <zkl.hpp>

#include <cstdio>
#include <mutex>
#include <string>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    try {
        zkl::client c(argv[1], std::chrono::seconds(10));
        std::string path = "/zkl-install-cpp-" + std::to_string(getpid());
        zkl::mutex m(c, path);
        std::lock_guard<zkl::mutex> hold(m);
        std::printf("hello.cpp: holding %s, fencing token %lld\n", path.c_str(),
                    static_cast<long long>(m.token()));
    } catch (const zkl::error &e) {
        std::fprintf(stderr, "hello.cpp: %s\n", e.what());
        return 1;
    }
    return 0;
}
